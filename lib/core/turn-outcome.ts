/**
 * External-runtime turn outcomes: how an `agent.external-runtime.turn-outcome.v1` document a
 * client reports for its operation in flight becomes that operation's result. The document is
 * parsed with the schema and its three conditional rules (lib/contracts/turn-outcome.ts) by the
 * caller; here the runtime checks what it can detect itself and answers with the contract's reason
 * code when it refuses: `binding-mismatch` (binding/ref is not the run), `event-stale` (turn/ref
 * is not the operation in flight), `event-unauthorized` (agent/id is not the agent the run acts
 * as), `usage-malformed`, `usage-overflow`, `usage-missing` (budget/charged). Accepted: completed
 * → the operation succeeded (a model turn's `model_turn_completed`, any other kind's
 * `tool_result` succeeded with the product as its primary artifact); refused and failed →
 * `operation_failed` (error_class the reason code, retryable when retryability says so);
 * cancelled → `operation_cancelled`; unknown → `operation_failed` with outcome_unknown: true.
 * `budget/charged` {input_tokens, output_tokens} feeds usage. docs/contracts/turn-outcome.md.
 */
import type { Operation, RunRecord, TurnOutcome } from '../contracts/index.ts';
import type { OperationResult } from './run-machine.ts';

/**
 * Why the runtime refused a turn outcome: a reason code of the contract, and the field it concerns.
 */
export interface TurnOutcomeRefusal {
  reason_code:
    | 'binding-mismatch'
    | 'event-stale'
    | 'event-unauthorized'
    | 'usage-malformed'
    | 'usage-overflow'
    | 'usage-missing';
  field: string;
  message: string;
}

export type TurnOutcomeDecision =
  | { ok: true; result: OperationResult; usage: { input_tokens: number; output_tokens: number } }
  | ({ ok: false } & TurnOutcomeRefusal);

const TOKEN_FIELDS = ['input_tokens', 'output_tokens'] as const;

/** The tokens `budget/charged` names (absent ones 0), or the refusal of a bad value. */
function chargedTokens(
  outcome: TurnOutcome,
): { input_tokens: number; output_tokens: number } | ({ ok: false } & TurnOutcomeRefusal) {
  const charged = outcome['budget/charged'];
  const tokens = { input_tokens: 0, output_tokens: 0 };
  let named = 0;
  for (const field of TOKEN_FIELDS) {
    const value = charged[field];
    if (value === undefined) continue;
    named += 1;
    const path = `budget/charged.${field}`;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || !Number.isInteger(value))
      return {
        ok: false,
        reason_code: 'usage-malformed',
        field: path,
        message: `${path} must be a whole number >= 0`,
      };
    if (value > Number.MAX_SAFE_INTEGER)
      return { ok: false, reason_code: 'usage-overflow', field: path, message: `${path} exceeds 2^53 - 1` };
    tokens[field] = value;
  }
  if (named === 0 && outcome['usage/fidelity'] !== 'unavailable' && outcome.status === 'completed')
    return {
      ok: false,
      reason_code: 'usage-missing',
      field: 'budget/charged',
      message:
        'a completed turn whose usage/fidelity is not unavailable charges input_tokens or output_tokens',
    };
  return tokens;
}

/**
 * The result of the in-flight operation `op` of `record` that `outcome` reports, or the refusal
 * with its reason code. Pure; the caller parsed `outcome` with the TurnOutcome schema.
 */
export function turnOutcomeResult(
  record: RunRecord,
  op: Operation,
  outcome: TurnOutcome,
): TurnOutcomeDecision {
  if (outcome['binding/ref'] !== record.run_id)
    return {
      ok: false,
      reason_code: 'binding-mismatch',
      field: 'binding/ref',
      message: 'binding/ref must be the run id',
    };
  if (outcome['turn/ref'] !== op.op_id)
    return {
      ok: false,
      reason_code: 'event-stale',
      field: 'turn/ref',
      message: `turn/ref must be ${op.op_id}, the operation in flight`,
    };
  if (record.principal.kind === 'agent' && outcome['agent/id'] !== record.principal.id)
    return {
      ok: false,
      reason_code: 'event-unauthorized',
      field: 'agent/id',
      message: 'agent/id is not the agent this run acts as',
    };
  const usage = chargedTokens(outcome);
  if ('ok' in usage) return usage;
  const message = `turn ${outcome['turn/ref']} ${outcome.status}: ${outcome['reason/code']}`;
  switch (outcome.status) {
    case 'completed':
      if (op.kind === 'model_turn')
        return {
          ok: true,
          usage,
          result: {
            kind: 'model_turn_completed',
            message: { text: null },
            tool_calls: [],
            finish_reason: 'stop',
            usage,
          },
        };
      return {
        ok: true,
        usage,
        result: {
          kind: 'tool_result',
          envelope: {
            envelope: 'raisin.tool-result/1',
            operation_id: op.op_id,
            status: 'succeeded',
            reads: [],
            writes: [],
            artifact_refs: [
              {
                kind: 'turn_product',
                locator: { path: outcome['product/ref'] ?? '' },
                revision: { value: outcome['product/digest'] ?? '' },
                role: 'primary',
              },
            ],
            evidence: [],
            diagnostics: [],
            suggested_next_actions: [],
          },
        },
      };
    case 'refused':
    case 'failed':
      return {
        ok: true,
        usage,
        result: {
          kind: 'operation_failed',
          error_class: outcome['reason/code'],
          retryable: outcome.retryability === 'retryable',
          outcome_unknown: false,
          message,
          usage,
        },
      };
    case 'cancelled':
      return { ok: true, usage, result: { kind: 'operation_cancelled', acknowledged: true, usage } };
    case 'unknown':
      return {
        ok: true,
        usage,
        result: {
          kind: 'operation_failed',
          error_class: 'unknown',
          retryable: false,
          outcome_unknown: true,
          message,
          usage,
        },
      };
  }
}
