/**
 * The HTTP API's own wire shapes (envelopes around the contracts: pages, lists, the error body,
 * query and path parameters). Run records, events, controls, acks and tool descriptors are the
 * contracts' schemas themselves (lib/contracts), so the OpenAPI document and the validators
 * come from one source. Issue 5, "The HTTP API".
 */
import { z } from '@hono/zod-openapi';
import {
  AgentEntry as AgentEntryContract,
  Checkpoint as CheckpointContract,
  ControlAck as ControlAckContract,
  Control as ControlContract,
  CreateRunInput as CreateRunInputContract,
  ForkRunInput as ForkRunInputContract,
  PolicyDocument as PolicyDocumentContract,
  PublishResult as PublishResultContract,
  RegistryEntry as RegistryEntryContract,
  RegistryListing as RegistryListingContract,
  RunEvent as RunEventContract,
  RunRecord as RunRecordContract,
  RunStatus,
  Subject,
  ToolDescriptor as ToolDescriptorContract,
  ToolEntry as ToolEntryContract,
  WorkspaceGrant as WorkspaceGrantContract,
} from '../contracts/index.ts';
import { HTTP_ERROR_STATUS } from './errors.ts';

// The contracts' schemas, each named once so the document refers to it ($ref) instead of
// repeating it. A lazy wrapper carries the name: the contract schemas may have been created
// before @hono/zod-openapi extended zod, so they cannot take `.openapi()` themselves; the
// wrapper validates with the contract's own schema.
const named = <T extends z.ZodType>(name: string, schema: T) => z.lazy(() => schema).openapi(name);
export const RunRecord = named('RunRecord', RunRecordContract);
export const RunEvent = named('RunEvent', RunEventContract);
export const Control = named('Control', ControlContract);
export const ControlAck = named('ControlAck', ControlAckContract);
export const ToolDescriptor = named('ToolDescriptor', ToolDescriptorContract);
export const CreateRunInput = named('CreateRunInput', CreateRunInputContract);
export const ForkRunInput = named('ForkRunInput', ForkRunInputContract);
export const ToolEntry = named('ToolEntry', ToolEntryContract);
export const PolicyDocument = named('PolicyDocument', PolicyDocumentContract);
export const AgentEntry = named('AgentEntry', AgentEntryContract);
export const WorkspaceGrant = named('WorkspaceGrant', WorkspaceGrantContract);
export const PublishResult = named('PublishResult', PublishResultContract);
export const RegistryEntry = named('RegistryEntry', RegistryEntryContract);
export const RegistryListing = named('RegistryListing', RegistryListingContract);

/** The document each registry publishes. */
export const RegistryDocuments = {
  tools: ToolEntry,
  policy: PolicyDocument,
  agents: AgentEntry,
  workspaces: WorkspaceGrant,
} as const;

/** `GET /admin/{kind}/entry?name=&version=`: the version defaults to the current one. */
export const RegistryEntryQuery = z.object({
  name: z
    .string()
    .min(1)
    .max(128)
    .openapi({ param: { name: 'name', in: 'query' }, example: 'lookup_order' }),
  version: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .openapi({ param: { name: 'version', in: 'query' }, example: '1.0.0' }),
});

/** One published version and every version of its name, oldest first. */
export const RegistryEntryView = z
  .object({ entry: RegistryEntry, versions: z.array(z.string()) })
  .openapi('RegistryEntryView');

/**
 * A whole-number query or path parameter: a string of digits (as it arrives), parsed to a
 * number in [min, max]; `fallback` when absent.
 */
function wholeNumber(min: number, max: number, fallback?: number) {
  const digits = z.string().regex(/^\d{1,15}$/, 'expected a whole number');
  const parsed = (fallback === undefined ? digits : digits.default(String(fallback))).transform(Number);
  return parsed.pipe(z.number().int().min(min).max(max));
}

/** `{code, message, details}`: see errors.ts for the codes and their statuses. */
export const ErrorBody = z
  .object({
    code: z.string().openapi({
      example: 'run_not_found',
      description: `A stable code, one of: ${Object.keys(HTTP_ERROR_STATUS).join(', ')}.`,
    }),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
  })
  .openapi('Error');

/** The answer to `POST /runs`. `control_capability` is returned once, when the run is created. */
export const CreateRunResponse = z
  .object({
    run: RunRecord,
    created: z.boolean(),
    control_capability: z.string().optional(),
  })
  .openapi('CreateRunResponse');

/** A run id in the path. */
export const RunIdParams = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'run_0f3c...' }),
});

/** Listing: by status (`status`), or by subject (`subject_workspace` + `subject_path`: the live run). */
export const ListRunsQuery = z
  .object({
    status: RunStatus.optional().openapi({ param: { name: 'status', in: 'query' } }),
    subject_workspace: Subject.shape.workspace
      .optional()
      .openapi({ param: { name: 'subject_workspace', in: 'query' } }),
    subject_path: Subject.shape.path.optional().openapi({ param: { name: 'subject_path', in: 'query' } }),
    limit: wholeNumber(1, 100, 20).openapi({
      param: { name: 'limit', in: 'query', description: '1..100 (default 20).' },
    }),
    cursor: z
      .string()
      .min(1)
      .max(2048)
      .optional()
      .openapi({ param: { name: 'cursor', in: 'query' } }),
  })
  .superRefine((q, ctx) => {
    const subjectGiven = q.subject_workspace !== undefined || q.subject_path !== undefined;
    if (subjectGiven && (q.subject_workspace === undefined || q.subject_path === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [q.subject_workspace === undefined ? 'subject_workspace' : 'subject_path'],
        message: 'subject_workspace and subject_path go together',
      });
    }
    if (!subjectGiven && q.status === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['status'],
        message: 'give status, or subject_workspace and subject_path',
      });
    }
  });

/** A page of runs the caller may read, newest first. `cursor` is absent on the last page. */
export const RunList = z
  .object({
    runs: z.array(RunRecord),
    cursor: z.string().optional(),
  })
  .openapi('RunList');

/** Maximum long-polling wait, in seconds. */
export const MAX_WAIT_SECONDS = 20;

export const EventsQuery = z.object({
  after: wholeNumber(0, Number.MAX_SAFE_INTEGER, 0).openapi({
    param: { name: 'after', in: 'query', description: 'Return events with seq > after (default 0).' },
  }),
  limit: wholeNumber(1, 1000, 100).openapi({
    param: { name: 'limit', in: 'query', description: '1..1000 (default 100).' },
  }),
  wait: z
    .string()
    .regex(/^\d{1,3}(\.\d{1,3})?$/, 'expected a number of seconds')
    .default('0')
    .transform(Number)
    .pipe(z.number().min(0).max(MAX_WAIT_SECONDS))
    .openapi({
      param: {
        name: 'wait',
        in: 'query',
        description: 'Seconds (0..20, default 0) to wait for an event after `after` when there is none yet.',
      },
    }),
});

/**
 * A page of events. `status` and `last_seq` are the run's as read BEFORE the events, so a
 * follower that sees a terminal status with `next_after >= last_seq` has every event.
 */
export const EventPage = z
  .object({
    events: z.array(RunEvent),
    /** Pass as `after` for the next page: the last event's seq, or the `after` asked for. */
    next_after: z.number().int().min(0),
    last_seq: z.number().int().min(0),
    status: RunStatus,
    /**
     * True when the run has ended and its reducer has received every event (its last answer,
     * after the terminal event, is in the log): no event will follow `last_seq`.
     */
    settled: z.boolean(),
  })
  .openapi('EventPage');

/** A checkpoint: what core owns, copied; domain state and transcript referenced. */
export const Checkpoint = named('Checkpoint', CheckpointContract);

export const CheckpointList = z.object({ checkpoints: z.array(Checkpoint) }).openapi('CheckpointList');

/** A child run as its parent's listing shows it (GET /runs/{id}/children). */
export const ChildRun = z
  .object({
    run_id: z.string(),
    status: RunStatus,
    depth: z.number().int().nonnegative(),
    parent_op_id: z.string().optional(),
    created_at: z.number(),
  })
  .openapi('ChildRun');
export const ChildRunList = z.object({ children: z.array(ChildRun) }).openapi('ChildRunList');

export const CheckpointParams = RunIdParams.extend({
  n: wholeNumber(0, Number.MAX_SAFE_INTEGER).openapi({ param: { name: 'n', in: 'path' } }),
});

/** `GET /runs/{id}/at/{seq}`: a seq of the run's log. */
export const RunAtParams = RunIdParams.extend({
  seq: wholeNumber(1, Number.MAX_SAFE_INTEGER).openapi({ param: { name: 'seq', in: 'path' } }),
});

/** A run as it stood at one seq (lib/replay/run-at.ts RunAtSeq). Issue 29 point 5. */
export const RunAtView = z
  .object({
    run_id: z.string(),
    seq: z.number().int(),
    current_seq: z.number().int(),
    status: z.string(),
    turn: z.number().int(),
    last_seq: z.number().int(),
    usage: z.record(z.string(), z.unknown()),
    open_requests: z.array(z.record(z.string(), z.unknown())),
    unanswered_calls: z.array(z.string()),
    state_rev: z.number().int(),
    state: z
      .unknown()
      .openapi({ description: 'The domain state of state_rev (null when state_known is false).' }),
    state_known: z.boolean(),
    projection: z.record(z.string(), z.unknown()).nullable().openapi({
      description:
        'The effective projection then; from the pinned reducer answering again (projection_known).',
    }),
    projection_known: z.boolean(),
    unknown_reason: z.string().optional(),
    checkpoint: z
      .object({ n: z.number().int(), reason: z.string(), state_rev: z.number().int() })
      .nullable()
      .openapi({ description: 'The last checkpoint written at or before seq.' }),
  })
  .passthrough()
  .openapi('RunAtSeq');

/** `?rev=`: a domain state revision (default: the run's current one). */
export const StateQuery = z.object({
  rev: wholeNumber(0, Number.MAX_SAFE_INTEGER)
    .optional()
    .openapi({
      param: { name: 'rev', in: 'query', description: 'The state revision (default: the current one).' },
    }),
});

/** One domain state revision of a run (write-once: the same revision always reads the same). */
export const StateRevision = z
  .object({
    run_id: z.string(),
    state_rev: z.number().int().min(0),
    state: z.unknown(),
    state_digest: z.string().openapi({ description: 'sha256 hex of the canonical JSON (RFC 8785) of state' }),
    state_at: z.string().optional().openapi({ description: 'The sort key of the item holding it' }),
  })
  .openapi('StateRevision');

/** The header that carries a run's control capability. */
export const CapabilityHeaders = z.object({
  'x-control-capability': z
    .string()
    .min(1)
    .optional()
    .openapi({
      param: { name: 'x-control-capability', in: 'header' },
      description: 'The run control capability returned by POST /runs; authorizes controls on that run.',
    }),
});

export const ResumeKeyParams = z.object({
  resume_key: z
    .string()
    .min(1)
    .max(1024)
    .openapi({ param: { name: 'resume_key', in: 'path' } }),
});

/** Any JSON value: a raisin.tool-result/1 envelope, or any other result (wrapped as legacy). */
export const ResultBody = z.unknown().openapi('ResultBody', {
  description: 'A raisin.tool-result/1 envelope, or any JSON value (normalized with legacy: true).',
});

/** The caller-chosen id of a delivery: a repeat with the same id is answered as a duplicate. */
export const DeliveryQuery = z.object({
  delivery_id: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[A-Za-z0-9._:~-]+$/, 'letters, digits and . _ : ~ -')
    .optional()
    .openapi({
      param: { name: 'delivery_id', in: 'query' },
      description:
        'Caller-chosen id of this delivery: a repeat gets {ack: "duplicate", original_seq} instead of a second result. Without it a repeat cannot be recognized.',
    }),
});

export const DeliveryResponse = z
  .union([
    z.object({ ack: z.literal('applied'), run_id: z.string(), seq: z.number().int().positive() }),
    z.object({ ack: z.literal('duplicate'), original_seq: z.number().int().positive() }),
    z.object({ ack: z.literal('duplicate'), held: z.literal(true), expires_at: z.number().int() }),
  ])
  .openapi('DeliveryResponse', {
    description:
      'applied: the seq of the tool_result; duplicate: a delivery_id already applied (original_seq) or still held (held).',
  });

export const HeldDeliveryResponse = z
  .object({ ack: z.literal('held'), resume_key: z.string(), expires_at: z.number().int() })
  .openapi('HeldDeliveryResponse', {
    description:
      'No wait on the key is recorded yet: the result is held by its resume_key until expires_at (ms epoch) and applied once when the wait is recorded.',
  });

export const ToolList = z.object({ tools: z.array(ToolDescriptor) }).openapi('ToolList');

export const FunctionParams = z.object({
  path: z
    .string()
    .max(512)
    .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'segments of letters, digits, . _ - separated by /')
    .refine((p) => !p.split('/').some((s) => s === '.' || s === '..'), 'no . or .. segments')
    .openapi({
      param: { name: 'path', in: 'path' },
      description: 'The function path without its leading slash; may contain slashes (agents/x → /agents/x).',
    }),
});

export const FunctionArtifact = z
  .object({
    function_path: z.string(),
    kind: z.enum(['js', 'wasm', 'star']),
    hash: z.string().openapi({ description: 'sha256 hex of the bytes; runs pin it when they bind it' }),
    size: z.number().int().positive(),
  })
  .openapi('FunctionArtifact');

/** A registered artifact with its bytes (base64), as `GET /functions/{path}` returns it. */
export const FunctionArtifactSource = FunctionArtifact.extend({
  bytes_base64: z
    .string()
    .openapi({ description: 'The artifact bytes, base64 (sha256 of the bytes = hash)' }),
}).openapi('FunctionArtifactSource');

export const Health = z.object({ status: z.literal('ok') }).openapi('Health');
