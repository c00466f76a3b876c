/**
 * The shapes of the client's calls (client.ts): what each takes (the options of a call, a
 * control as sent) and what it answers (zod schemas and their types, for each answer that
 * lib/contracts does not already define). Every method parses its answer with its schema; a
 * mismatch is ApiError `invalid_response`. Issue 5, "lib/client and bin/".
 */
import { z } from 'zod';
import {
  Checkpoint as CheckpointContract,
  type Control as ControlSchema,
  RunEvent,
  RunRecord,
  RunStatus,
} from '../contracts/index.ts';
import type { CallerOptions } from './call.ts';

// ---------------------------------------------------------------- responses

/**
 * The answer to `POST /runs` and `POST /runs/{id}/fork`: the run record as created, `created`
 * (false when a `create_key` replay answered with the run it created before), and
 * `control_capability`, a token that lets its holder control this one run (sent as
 * `X-Control-Capability`; `RunCallOptions.capability`), when the API issued one.
 */
export const CreateRunResult = z.object({
  run: RunRecord,
  created: z.boolean(),
  control_capability: z.string().optional(),
});
export type CreateRunResult = z.infer<typeof CreateRunResult>;

/** One page of `GET /runs`: run records, newest first; `cursor` (opaque) fetches the next page, absent on the last. */
export const RunPage = z.object({ runs: z.array(RunRecord), cursor: z.string().optional() });
export type RunPage = z.infer<typeof RunPage>;

/**
 * One page of `GET /runs/{id}/events`: `events` in seq order (seq > the `after` asked for);
 * `next_after`, the `after` of the next page; `last_seq`, the run's last event so far; `status`,
 * the run's status when the page was read.
 */
export const EventPage = z.object({
  events: z.array(RunEvent),
  next_after: z.number().int().min(0),
  last_seq: z.number().int().min(0),
  status: RunStatus,
  /** The run ended and its reducer received every event: nothing follows last_seq. */
  settled: z.boolean().optional(),
});
export type EventPage = z.infer<typeof EventPage>;

/**
 * A checkpoint of a run (`GET /runs/{id}/checkpoints[/{n}]`): number `n`, the seq it was taken
 * at, the state it holds and its digest; what `fork` starts from.
 */
export const Checkpoint = CheckpointContract;
export type Checkpoint = z.infer<typeof Checkpoint>;

/** One domain state revision of a run (`GET /runs/{id}/state`). */
export const StateRevision = z.object({
  run_id: z.string(),
  state_rev: z.number().int().min(0),
  state: z.unknown(),
  state_digest: z.string(),
  state_at: z.string().optional(),
});
export type StateRevision = z.infer<typeof StateRevision>;

/** A run as it stood at one seq (`GET /runs/{id}/at/{seq}`, time travel); issue 29 point 5. */
export const RunAtSeq = z
  .object({
    run_id: z.string(),
    seq: z.number().int(),
    current_seq: z.number().int(),
    status: z.string(),
    turn: z.number().int(),
    usage: z.record(z.string(), z.unknown()),
    open_requests: z.array(z.record(z.string(), z.unknown())),
    unanswered_calls: z.array(z.string()),
    state_rev: z.number().int(),
    state: z.unknown(),
    state_known: z.boolean(),
    projection: z.record(z.string(), z.unknown()).nullable(),
    projection_known: z.boolean(),
    unknown_reason: z.string().optional(),
    checkpoint: z.object({ n: z.number().int(), reason: z.string(), state_rev: z.number().int() }).nullable(),
  })
  .passthrough();
export type RunAtSeq = z.infer<typeof RunAtSeq>;

/** A child run a run delegated to (`GET /runs/{id}/children`); `created_at` in ms since the epoch. */
export const ChildRun = z.object({
  run_id: z.string(),
  status: z.string(),
  depth: z.number(),
  parent_op_id: z.string().optional(),
  created_at: z.number(),
});
export type ChildRun = z.infer<typeof ChildRun>;

/**
 * The answer to a delivery: applied (the seq of the tool_result), duplicate (the delivery_id was
 * applied: original_seq; or is still held: held), or held (no wait recorded yet: kept by the key
 * until expires_at, ms epoch, and applied once the wait is recorded).
 */
export const Delivery = z.union([
  z.object({ ack: z.literal('applied'), run_id: z.string(), seq: z.number().int().positive() }),
  z.object({ ack: z.literal('duplicate'), original_seq: z.number().int().positive() }),
  z.object({ ack: z.literal('duplicate'), held: z.literal(true), expires_at: z.number() }),
  z.object({ ack: z.literal('held'), resume_key: z.string(), expires_at: z.number() }),
]);
export type Delivery = z.infer<typeof Delivery>;

/**
 * A registered function artifact (`PUT /functions/{path}`): its path, kind (`js`, `wasm`,
 * `star`), content hash and size in bytes.
 */
export const FunctionArtifact = z.object({
  function_path: z.string(),
  kind: z.enum(['js', 'wasm', 'star']),
  hash: z.string(),
  size: z.number().int().positive(),
});
export type FunctionArtifact = z.infer<typeof FunctionArtifact>;

/** A registered artifact with its bytes (`GET /functions/{path}`, admin only), base64. */
export const FunctionSource = FunctionArtifact.extend({ bytes_base64: z.string() });
export type FunctionSource = z.infer<typeof FunctionSource>;

/** The Content-Type `PUT /functions/{path}` takes for each artifact kind. */
export const ARTIFACT_MEDIA_TYPES: Readonly<Record<FunctionArtifact['kind'], string>> = {
  js: 'application/javascript',
  wasm: 'application/wasm',
  star: 'text/x-starlark',
};

// ---------------------------------------------------------------- inputs

/** A control as sent: control_id optional (the client generates a UUID). */
export type ControlInput =
  z.input<typeof ControlSchema> extends infer C
    ? C extends { control_id: string }
      ? Omit<C, 'control_id'> & { control_id?: string }
      : never
    : never;

/** Per-call options of the calls that act on one run. */
export interface RunCallOptions {
  /** The run's control capability (overrides the client's). */
  capability?: string;
}

/** Per-call options of a control (stop, pause, resume, steer, approve, answer). */
export interface ControlOptions extends RunCallOptions {
  /** Reuse an id to retry a control safely; default: a fresh UUID. */
  control_id?: string;
}

/**
 * The filters of `listRuns`: `status` (runs in that status, newest first, paged) or `subject`
 * (its live run); one of the two is required (`validation_failed` naming `status` otherwise).
 */
export interface ListRunsParams {
  /** Only runs in this status. */
  status?: RunStatus;
  /** Only runs on this subject. */
  subject?: { workspace: string; path: string };
  /** 1..100 (default 20). */
  limit?: number;
  /** The `cursor` of the previous page. */
  cursor?: string;
}

/** Which events `events` reads: a page after a seq, optionally long-polling for the first. */
export interface EventsParams extends RunCallOptions {
  /** Events with seq > after (default 0). */
  after?: number;
  /** 1..1000 (default 100). */
  limit?: number;
  /** Seconds to long-poll for the first event (0..20, default 0). */
  wait?: number;
}

/**
 * The options of `followEvents`: where to start (`after`), the page size, the long-poll `wait`
 * per request (seconds, default 20 here), a signal to stop, and a callback per page.
 */
export interface FollowParams extends EventsParams {
  /** Stops the iteration (between pages). */
  signal?: AbortSignal;
  /** Called with every page, before its events are yielded (status and last_seq for live views). */
  onPage?: (page: EventPage) => void;
}

/** The options of `createClient`: where the API is and how to authenticate. */
export interface ClientOptions extends CallerOptions {
  /** e.g. `http://127.0.0.1:8787` or the API Gateway URL (a path prefix such as a stage is kept). */
  baseUrl: string;
}
