/**
 * The shapes of the client's calls (client.ts): what each takes (the options of a call, a
 * control as sent) and, under the names this client has exported since its first release, what
 * it answers: the contracts' own schemas (lib/contracts/http-api.ts), the ones the routes
 * document. Every method parses its answer with its operation's schema (operations.ts); a
 * mismatch is ApiError `invalid_response`.
 */
import { z } from 'zod';
import {
  ChildRun as ChildRunContract,
  type Control as ControlSchema,
  CreateRunResponse,
  DeliveryResponse,
  EventPage as EventPageContract,
  FunctionArtifact as FunctionArtifactContract,
  FunctionArtifactSource,
  HeldDeliveryResponse,
  PublicCheckpoint,
  RunAtSeq as RunAtSeqContract,
  RunList,
  type RunStatus,
  StateRevision as StateRevisionContract,
} from '../contracts/index.ts';
import type { CallerOptions } from './call.ts';

// ---------------------------------------------------------------- responses

/**
 * One page of `GET /runs/{id}/events`: `events` in seq order (seq > the `after` asked for);
 * `next_after`, the `after` of the next page; `last_seq`, the run's last event so far; `status`,
 * the run's status when the page was read; `settled`, nothing follows `last_seq`.
 */
export const EventPage = EventPageContract;
export type EventPage = z.infer<typeof EventPage>;

/**
 * A checkpoint of a run (`GET /runs/{id}/checkpoints[/{n}]`): number `n`, why it was written,
 * what core owns (copied), the state revision it references and the transcript cutoff; what
 * `forkRun` starts from. The contract's PublicCheckpoint: no storage key.
 */
export const Checkpoint = PublicCheckpoint;
export type Checkpoint = z.infer<typeof Checkpoint>;

/** One domain state revision of a run (`GET /runs/{id}/state`): `{run_id, state_rev, state, state_digest}`. */
export const StateRevision = StateRevisionContract;
export type StateRevision = z.infer<typeof StateRevision>;

/** A run as it stood at one seq (`GET /runs/{id}/at/{seq}`, time travel): the contract's RunAtSeq. */
export const RunAtSeq = RunAtSeqContract;
export type RunAtSeq = z.infer<typeof RunAtSeq>;

/** A child run a run delegated to (`GET /runs/{id}/children`); `created_at` in ms since the epoch. */
export const ChildRun = ChildRunContract;
export type ChildRun = z.infer<typeof ChildRun>;

/**
 * A registered function artifact (`PUT /functions/{path}`): its path, kind (`js`, `wasm`,
 * `star`), content hash and size in bytes.
 */
export const FunctionArtifact = FunctionArtifactContract;
export type FunctionArtifact = z.infer<typeof FunctionArtifact>;

/**
 * The answer to `POST /runs` and `POST /runs/{id}/fork` (the contract's CreateRunResponse): the
 * run record as created, `created` (false when a `create_key` replay answered with the run it
 * created before), and `control_capability`, a token that lets its holder control this one run
 * (sent as `X-Control-Capability`; `RunCallOptions.capability`), when the API issued one.
 */
export const CreateRunResult = CreateRunResponse;
export type CreateRunResult = z.infer<typeof CreateRunResult>;

/** One page of `GET /runs` (the contract's RunList): run records, newest first; `cursor` (opaque) fetches the next page, absent on the last. */
export const RunPage = RunList;
export type RunPage = z.infer<typeof RunPage>;

/**
 * The answer to a delivery: applied (the seq of the tool_result), duplicate (the delivery_id was
 * applied: original_seq; or is still held: held), both 200; or held, 202 (no wait recorded yet:
 * kept by the key until expires_at, ms epoch, and applied once the wait is recorded).
 */
export const Delivery = z.union([DeliveryResponse, HeldDeliveryResponse]);
export type Delivery = z.infer<typeof Delivery>;

/** A registered artifact with its bytes (`GET /functions/{path}`, admin only), base64 (the contract's FunctionArtifactSource). */
export const FunctionSource = FunctionArtifactSource;
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
