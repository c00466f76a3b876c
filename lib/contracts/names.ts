/**
 * The contracts' closed name lists as plain constants, with no zod: what a caller needs before
 * it parses anything (the CLI's option choices, read when `--help` is drawn). run.ts,
 * controls.ts and registry.ts build their enums from these and re-export them; import them from
 * lib/contracts/index.ts as before, or from here to stay zod-free.
 */

/** Every run status, in lifecycle order. */
export const RUN_STATUSES = [
  'queued',
  'running',
  'waiting',
  'paused',
  'cancelling',
  'completed',
  'failed',
  'stopped',
] as const;

/** The statuses a run never leaves. */
export const TERMINAL_STATUSES = ['completed', 'failed', 'stopped'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

/** Whether `status` is terminal (completed, failed, stopped). */
export function isTerminalStatus(status: (typeof RUN_STATUSES)[number]): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/**
 * The 9 budget limits (run.ts Budgets), checked when an operation begins. Absent means
 * unlimited; `max_wall_ms` is milliseconds, the rest are counts.
 */
export const BUDGET_LIMITS = [
  'max_turns',
  'max_operations',
  'max_model_calls',
  'max_total_tokens',
  'max_wall_ms',
  'max_consecutive_op_failures',
  'max_children',
  'max_live_children',
  'max_depth',
] as const;

/** What a steer does while an operation is in flight (see controls.ts SteerWhenBusy). */
export const STEER_WHEN_BUSY = ['enqueue', 'reject', 'interrupt'] as const;

/** The registries, as they appear in paths (`/admin/{kind}`) and pins. */
export const REGISTRY_KINDS = ['tools', 'policy', 'agents', 'workspaces'] as const;
