/**
 * The wire shapes of client-driven runs: the fence every client write carries, the lease a
 * client takes, the operations it begins and reports, the requests it opens, how it ends the
 * run. docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases, recovery
 * and the sweeper"; docs/contracts/turn-outcome.md (a model turn may be reported as a turn outcome
 * document).
 */
import { z } from 'zod';
import { cleanId } from './clean-text.ts';
import { Count, JsonObject, RequestExpiresInMs } from './common.ts';
import { ApprovalSubject, TokenUsage, ToolCall, ToolOffered } from './reducer.ts';

/** The fence a lease holder presents on every write: its owner name and the run's epoch. */
export const Fence = z.strictObject({ owner: cleanId(200), epoch: Count });
export type Fence = z.infer<typeof Fence>;

/** Longest lease a client may ask for (ms): 15 minutes. */
export const MAX_CLIENT_LEASE_MS = 15 * 60_000;
/** Shortest lease a client may ask for (ms): 1 second. */
export const MIN_CLIENT_LEASE_MS = 1_000;

/**
 * `POST /runs/{id}/lease`: take the lease as `owner` (no epoch), or renew the fence
 * `{owner, epoch}` (refused fenced_out once it was lost). `ttl_ms` defaults to 90 000.
 */
export const LeaseRequest = z.strictObject({
  owner: cleanId(200),
  epoch: Count.optional(),
  ttl_ms: z.number().int().min(MIN_CLIENT_LEASE_MS).max(MAX_CLIENT_LEASE_MS).optional(),
});
export type LeaseRequest = z.infer<typeof LeaseRequest>;

/** The lease a client holds: the fence plus its expiry (ms since the epoch). */
export const LeaseGrant = z.object({
  owner: z.string(),
  epoch: Count,
  expires_at: z.number(),
});
export type LeaseGrant = z.infer<typeof LeaseGrant>;

const flags = { replay_safe: z.boolean(), interruptible: z.boolean().default(true) };

/**
 * The tool names a client-driven run may not call: every name starting with `/lib/raisin`
 * (case-blind), the runtime's own tools (the delegate tools, DELEGATE_TOOL), which core executes
 * for a reducer-driven run only. A client executes its operations itself, so core would never
 * start the child a delegate call stands for, yet count it (`counters.children`). Refused 400
 * validation_failed, issue `reserved_tool` at `request.tool`. docs/guides/delegation.md.
 */
export const CLIENT_RESERVED_TOOL_PREFIX = '/lib/raisin';

/**
 * Whether a client-driven `tool_call` may not name `tool` ({@link CLIENT_RESERVED_TOOL_PREFIX}),
 * also behind leading white space, with doubled slashes (`//lib/raisin/...`) or compatibility
 * characters (a fullwidth slash), which would otherwise let a log show a call that reads as the
 * runtime's delegate tool.
 */
export function isClientReservedTool(tool: string): boolean {
  const path = tool
    .normalize('NFKC')
    .replace(/^\s+/u, '')
    .replace(/\/{2,}/gu, '/')
    .toLowerCase();
  return path.startsWith(CLIENT_RESERVED_TOOL_PREFIX);
}

/** A client's tool name: a clean identifier outside the runtime's reserved tools. */
const ClientTool = cleanId(256).superRefine((tool, ctx) => {
  if (!isClientReservedTool(tool)) return;
  ctx.addIssue({
    code: 'custom',
    params: { code: 'reserved_tool' },
    message: `${tool} is a runtime tool (delegation is for reducer-driven runs); a client-driven run calls its own tools`,
  });
});

/** A tool call a client's model turn reports: its ids are printed identifiers (cleanId). */
const ClientToolCall = ToolCall.extend({ call_id: cleanId(256), name: cleanId(256) });

/** `POST /runs/{id}/operations`: begin an operation the client executes itself. */
export const BeginOperationInput = z.discriminatedUnion('kind', [
  z.strictObject({
    fence: Fence,
    kind: z.literal('tool_call'),
    ...flags,
    request: z.strictObject({
      /** Not a runtime tool (`/lib/raisin...`): refused `reserved_tool`. */
      tool: ClientTool,
      args: JsonObject.default({}),
      mutating: z.boolean(),
      call_id: cleanId(256).optional(),
    }),
  }),
  z.strictObject({
    fence: Fence,
    kind: z.literal('model_turn'),
    replay_safe: z.boolean().default(true),
    interruptible: z.boolean().default(true),
    request: z
      .strictObject({
        tools_offered: z.array(ToolOffered).default([]),
        instructions: z.string().optional(),
        context: z.unknown().optional(),
      })
      .default({ tools_offered: [] }),
  }),
  z.strictObject({
    fence: Fence,
    kind: z.literal('compaction'),
    replay_safe: z.boolean().default(true),
    interruptible: z.boolean().default(true),
    request: JsonObject.default({}),
  }),
  z.strictObject({
    fence: Fence,
    kind: z.literal('custom'),
    /** The custom kind's name, e.g. `browse` (not one of the three built-in kinds). */
    name: cleanId(64)
      .refine((n) => !['model_turn', 'tool_call', 'compaction'].includes(n), 'use that kind itself')
      .superRefine((name, ctx) => {
        if (isClientReservedTool(name))
          ctx.addIssue({
            code: 'custom',
            params: { code: 'reserved_tool' },
            message: `${name} is a runtime tool's name; a custom operation names its own kind`,
          });
      }),
    ...flags,
    request: JsonObject.default({}),
  }),
]);
export type BeginOperationInput = z.infer<typeof BeginOperationInput>;

/** How a client's operation ended: one of the operation outcomes the step worker records. */
export const ClientOperationResult = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('model_turn_completed'),
    message: z.object({ text: z.string().nullable().optional() }).default({ text: null }),
    tool_calls: z.array(ClientToolCall).default([]),
    finish_reason: cleanId(64).default('stop'),
    usage: TokenUsage,
  }),
  /** Any tool answer: normalized into raisin.tool-result/1 like every other (legacy-wrapped if it claims none). */
  z.strictObject({ kind: z.literal('tool_result'), envelope: z.unknown() }),
  z.strictObject({
    kind: z.literal('operation_failed'),
    error_class: cleanId(128),
    retryable: z.boolean(),
    outcome_unknown: z.boolean().default(false),
    message: z.string(),
    usage: TokenUsage.optional(),
  }),
  z.strictObject({
    kind: z.literal('operation_cancelled'),
    acknowledged: z.boolean().default(true),
    usage: TokenUsage.optional(),
  }),
]);
export type ClientOperationResult = z.infer<typeof ClientOperationResult>;

/**
 * `POST /runs/{id}/operations/outcome`: the end of the operation `op_id`, as a `result`, or as
 * an `agent.external-runtime.turn-outcome.v1` document (`turn_outcome`, parsed by the engine
 * with the schema's three rules so that a refusal names the field). Exactly one of the two.
 */
export const ReportOutcomeInput = z
  .strictObject({
    fence: Fence,
    op_id: cleanId(256),
    result: z.unknown().optional(),
    turn_outcome: z.unknown().optional(),
  })
  .refine((b) => (b.result === undefined) !== (b.turn_outcome === undefined), {
    message: 'give result or turn_outcome, exactly one',
    path: ['result'],
  });
export type ReportOutcomeInput = z.infer<typeof ReportOutcomeInput>;

/** `POST /runs/{id}/requests`: open an approval or a question between operations. */
export const OpenRequestInput = z.strictObject({
  fence: Fence,
  request: z.discriminatedUnion('kind', [
    z.strictObject({
      kind: z.literal('approval'),
      subject: ApprovalSubject,
      expires_in_ms: RequestExpiresInMs.optional(),
    }),
    z.strictObject({
      kind: z.literal('input'),
      question: z.string().min(1),
      choices: z.array(z.string()).optional(),
      schema: JsonObject.optional(),
      expires_in_ms: RequestExpiresInMs.optional(),
    }),
  ]),
});
export type OpenRequestInput = z.infer<typeof OpenRequestInput>;

/** A body that carries only the fence (release, take steers). */
export const FenceBody = z.strictObject({ fence: Fence });

/** `POST /runs/{id}/complete`. */
export const CompleteRunInput = z.strictObject({
  fence: Fence,
  outcome: z.enum(['succeeded', 'partial', 'blocked']).default('succeeded'),
  summary: z.string().max(10_000).optional(),
});

/** `POST /runs/{id}/fail`: the client's own failure code (e.g. `agent_crashed`). */
export const FailRunInput = z.strictObject({
  fence: Fence,
  code: cleanId(200),
});

/** A steer handed to the client at a boundary. */
export const TakenSteer = z.object({ steer_id: z.string(), input: z.unknown(), seq: Count });
