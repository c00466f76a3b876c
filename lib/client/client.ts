/**
 * A typed TypeScript client of the HTTP API (lib/http): one method per route, named after its
 * operationId (the old names kept for one release: DeprecatedMethods), control helpers that generate
 * a control_id when none is given, and `followEvents`, an async iterator over a run's events
 * built on long polling. Responses are parsed with the routes' own zod schemas (operations.ts);
 * every failure is an ApiError with the API's code. Browser-safe: only fetch, URL, Headers and
 * Web Crypto's `crypto.randomUUID` (Node 20+, browsers in secure contexts), no `node:*`.
 * Published as the `@agent-runs/client` package (packages/client). The web console (console/) runs
 * this same client in the browser.
 */
import type { z } from 'zod';
import {
  CheckpointParams,
  DeliveryQuery,
  EventsQuery,
  ListRunsQuery,
  ResumeKeyParams,
  RunAtParams,
  RunIdParams,
  StateQuery,
} from '../contracts/http-params.ts';
import type {
  ControlAck,
  CreateRunInput,
  DeploymentConfig,
  ForkRunInput,
  PublicRunRecord,
  ReducerCheckReport,
  ReducerUpgradeReport,
  RunEvent,
  ToolDescriptor,
} from '../contracts/index.ts';
import { type CallFn, httpCaller, pauseFor } from './call.ts';
import { catalogMethods } from './catalog-methods.ts';
import { type ClientDrivenMethods, clientDrivenMethods } from './client-driven.ts';
import { ApiError } from './errors.ts';
import { type FollowLiveOptions, followSse, type LiveTarget } from './live.ts';
import { OPERATION_ANSWERS as ANSWERS } from './operations.ts';
import { type RegistryMethods, registryMethods } from './registry-methods.ts';
import {
  type Checkpoint,
  type ChildRun,
  type ClientOptions,
  type ControlInput,
  type ControlOptions,
  type CreateRunResult,
  Delivery,
  type EventPage,
  type EventsParams,
  type FollowParams,
  type FunctionArtifact,
  type ListRunsParams,
  type RunAtSeq,
  type RunCallOptions,
  type RunPage,
  type StateRevision,
} from './shapes.ts';

/**
 * The typed client of the HTTP API, made by `createClient`: one method per route. Every method
 * resolves with the answer parsed with its documented schema, and rejects with an `ApiError`:
 * the API's `code` and HTTP `status` (`run_not_found` 404, `validation_failed` 400 naming the
 * field in `details`, ...), `unreachable` (status 0) when there was no answer, or
 * `invalid_response` when the answer does not have the documented shape. Methods that name a
 * run send the client's (or the call's) control capability.
 */
export interface AgentRunsClient extends ClientDrivenMethods, RegistryMethods, DeprecatedMethods {
  /** The API's base URL, without a trailing slash. */
  readonly baseUrl: string;
  /** The token the client sends (the live WebSocket presents it too). */
  readonly token?: string;
  /**
   * Creates a run (`POST /runs`): server-driven with a `reducer`, client-driven with `reducer:
   * null`. Resolves with `{run, created, control_capability?}`; `created: false` with the run
   * that already was there for a `create_key` replay or a subject with a live run. Errors:
   * `validation_failed` (400, `details` names the field), `subject_busy` (409, the subject's
   * live run is one the caller may not see), `create_key_reused` (409, the key was used for
   * another request), `reducer_not_found` (422), `quota_exceeded` (429, `retryAfterSeconds`).
   *
   * @example
   * const { run, created } = await client.createRun({
   *   subject: { workspace: 'demo', path: '/notes/today' },
   *   reducer: { function_path: '/lib/raisin/ai/agent-run-reducer' },
   *   input: 'Summarize my notes.',
   *   budgets: { max_turns: 5 },
   *   create_key: 'notes-2026-12-03', // a retry with the same key answers the same run
   * });
   * console.log(created, run.status); // true queued
   */
  createRun(input: CreateRunInput): Promise<CreateRunResult>;
  /**
   * The run record (`GET /runs/{id}`). Errors: `run_not_found` (404, also for a run the caller may not see).
   *
   * @example
   * const run = await client.getRun(runId);
   * if (run.status === 'waiting') console.log(run.open_requests);
   */
  getRun(runId: string, options?: RunCallOptions): Promise<PublicRunRecord>;
  /**
   * One page of runs the caller may read (`GET /runs`): by status, newest first, or a subject's live run.
   *
   * @example
   * const first = await client.listRuns({ status: 'running', limit: 50 });
   * if (first.cursor !== undefined) await client.listRuns({ status: 'running', cursor: first.cursor });
   */
  listRuns(params: ListRunsParams): Promise<RunPage>;
  /**
   * One page of a run's events (`GET /runs/{id}/events`): seq > `after`, at most `limit`,
   * waiting up to `wait` seconds for the first when there is none yet.
   *
   * @example
   * const page = await client.listRunEvents(runId, { after: 0, limit: 100, wait: 10 });
   * for (const event of page.events) console.log(event.seq, event.kind);
   * const next = await client.listRunEvents(runId, { after: page.next_after });
   */
  listRunEvents(runId: string, params?: EventsParams): Promise<EventPage>;
  /**
   * Yields every event after `after`, long-polling, until the run has settled (ended, its reducer
   * answered every event) and all its events were yielded. A 429 `too_many_waits` (the caller
   * holds as many open waits as the API allows) is waited out for its Retry-After, then polled again.
   *
   * @example
   * for await (const event of client.followEvents(runId)) console.log(event.seq, event.kind);
   * // Here the run has ended and its reducer saw every event.
   */
  followEvents(runId: string, params?: FollowParams): AsyncGenerator<RunEvent, void, undefined>;
  /**
   * Follows the run over server-sent events (`GET /runs/{id}/events/stream`, followSse in
   * live.ts): every event after `after`, each parsed with RunEvent, until the run settled.
   * Resumes with Last-Event-ID after each response; a 429 `too_many_waits` is waited out.
   */
  streamRunEvents(
    runId: string,
    options?: FollowLiveOptions & { wait?: number },
  ): AsyncGenerator<RunEvent, void, undefined>;
  /** The run's checkpoints, oldest first. */
  listRunCheckpoints(runId: string, options?: RunCallOptions): Promise<Checkpoint[]>;
  /** Checkpoint number `n` of the run. Errors: `checkpoint_not_found` (404). */
  getRunCheckpoint(runId: string, n: number, options?: RunCallOptions): Promise<Checkpoint>;
  /** The child runs `runId` delegated to, oldest first. */
  listRunChildren(runId: string, options?: RunCallOptions): Promise<ChildRun[]>;
  /** A domain state revision (default: the current one); revisions are write-once. */
  getRunState(runId: string, options?: RunCallOptions & { rev?: number }): Promise<StateRevision>;
  /**
   * `POST /admin/reducers/check` (admin): checks an artifact against stored runs server-side;
   * the answer is `{artifact, runs, totals, truncated}` (lib/http/check-runs.ts).
   */
  checkReducer(body: Record<string, unknown>): Promise<ReducerCheckReport>;
  /**
   * `POST /admin/reducers/upgrade` (admin): resumes, accepting the change, each run paused
   * `reducer_changed` on `function_path` whose check passes; refuses the rest with the divergence.
   */
  upgradeReducerRuns(body: Record<string, unknown>): Promise<ReducerUpgradeReport>;
  /** The run as it stood at `seq` (time travel: from its log and stored states, no new run). */
  getRunAtSeq(runId: string, seq: number, options?: RunCallOptions): Promise<RunAtSeq>;
  /**
   * Creates a run from checkpoint `input.checkpoint` of `runId` (optionally with an edited
   * `state` and `input`), owned by the caller; `created: false` for a create_key replay.
   *
   * @example
   * const [first] = await client.listRunCheckpoints(runId);
   * if (first !== undefined) {
   *   const { run } = await client.forkRun(runId, { checkpoint: first.n, input: 'Try again, shorter.' });
   *   console.log(run.run_id);
   * }
   */
  forkRun(runId: string, input: ForkRunInput, options?: RunCallOptions): Promise<CreateRunResult>;
  /**
   * Sends any control (`POST /runs/{id}/controls`; `command` names it), with a fresh
   * `control_id` when none is given. Resolves with the ack: `{ack: 'applied', seq}`,
   * `{ack: 'duplicate', original_seq}` (this control_id was applied before) or
   * `{ack: 'rejected', reason, seq}` (recorded, not applied: `already_paused`, `run_busy`, ...).
   * Errors: `run_terminal` (409), `validation_failed` (400).
   *
   * @example
   * const ack = await client.applyControl(runId, { command: 'pause', reason: 'maintenance' });
   * if (ack.ack === 'rejected') console.log(ack.reason); // e.g. already_paused
   */
  applyControl(runId: string, control: ControlInput, options?: RunCallOptions): Promise<ControlAck>;
  /**
   * Stops the run: at once between operations, or once the operation in flight ended (`cancelling`).
   *
   * @example
   * await client.stop(runId, { reason: 'the user cancelled' });
   */
  stop(runId: string, options?: ControlOptions & { reason?: string }): Promise<ControlAck>;
  /**
   * Pauses the run at its next boundary between operations.
   *
   * @example
   * const controlId = crypto.randomUUID(); // kept: a retry with it is answered as a duplicate
   * await client.pause(runId, { reason: 'review', control_id: controlId });
   */
  pause(runId: string, options?: ControlOptions & { reason?: string }): Promise<ControlAck>;
  /**
   * Resumes a paused run; `budget_increase` raises limits by the amounts given (keys are budget
   * names such as `max_turns`), `accept_reducer_change` accepts a reducer that changed since.
   *
   * @example
   * await client.resume(runId, { budget_increase: { max_turns: 10 } });
   */
  resume(
    runId: string,
    options?: ControlOptions & {
      budget_increase?: Record<string, number>;
      accept_reducer_change?: boolean;
    },
  ): Promise<ControlAck>;
  /**
   * Queues `input` for the run, consumed at its next boundary between operations. `when_busy`
   * (while an operation is in flight): `enqueue` (default), `reject` (ack rejected `run_busy`),
   * `interrupt` (an interruptible operation is cancelled first).
   *
   * @example
   * await client.steer(runId, 'Focus on the failing test.', { when_busy: 'interrupt' });
   */
  steer(
    runId: string,
    input: unknown,
    options?: ControlOptions & { when_busy?: 'enqueue' | 'reject' | 'interrupt' },
  ): Promise<ControlAck>;
  /**
   * Decides an open approval: `requestId` and `subjectDigest` as the open request shows them
   * (`run.open_requests`); `decision` default `approved`.
   *
   * @example
   * const run = await client.getRun(runId);
   * for (const request of run.open_requests) {
   *   if (request.kind === 'approval') await client.approve(runId, request.request_id, request.subject.digest);
   * }
   */
  approve(
    runId: string,
    requestId: string,
    subjectDigest: string,
    options?: ControlOptions & { decision?: 'approved' | 'rejected'; reason?: string },
  ): Promise<ControlAck>;
  /**
   * provide_input: answers an open question.
   *
   * @example
   * const run = await client.getRun(runId);
   * const question = run.open_requests.find((request) => request.kind === 'input');
   * if (question !== undefined) await client.answer(runId, question.request_id, 'Yes, go ahead.');
   */
  answer(runId: string, requestId: string, value: unknown, options?: ControlOptions): Promise<ControlAck>;
  /**
   * Delivers an external result (a raisin.tool-result/1 envelope, or any JSON) by resume key
   * (`POST /results/{key}`). `delivery_id`: the caller's id of this delivery, so that a repeat
   * is answered as a duplicate. Errors: `resume_key_not_found` (404),
   * `result_already_delivered` (409, another delivery was applied).
   *
   * @example
   * // The resume key as the run's open result request named it (to a webhook, a queue, ...).
   * const delivery = await client.deliverResult('rk-from-the-request', { ok: true }, { delivery_id: 'hook-42' });
   * if (delivery.ack === 'held') console.log('held until', delivery.expires_at);
   */
  deliverResult(
    resumeKey: string,
    result: unknown,
    options?: RunCallOptions & { delivery_id?: string },
  ): Promise<Delivery>;
  /** The registered tools (`GET /v1/tools`): metadata only, never handlers or credentials. */
  listTools(): Promise<ToolDescriptor[]>;
  /** Registers an artifact (admin): `functionPath` starts with `/`; `kind` picks the Content-Type. */
  putFunction(
    functionPath: string,
    bytes: Uint8Array,
    kind: FunctionArtifact['kind'],
  ): Promise<FunctionArtifact>;
  /** The artifact at `functionPath` now, with its bytes (admin, `GET /functions/{path}`). Errors: `function_not_found` (404). */
  getFunction(functionPath: string): Promise<FunctionArtifact & { bytes: Uint8Array }>;
  /** `GET /health` (no token needed): `{status: 'ok'}` when the API answers. */
  getHealth(): Promise<{ status: 'ok' }>;
  /** `GET /config`: the deployment's timings (lib/contracts/timings.ts), what the `waiting:` hints assume. */
  getConfig(): Promise<DeploymentConfig>;
  /** The API's OpenAPI 3.1 document (`GET /openapi.json`). */
  getOpenApiDocument(): Promise<Record<string, unknown>>;
}

// ---------------------------------------------------------------- the old names

/**
 * The client's method names before they were named after the OpenAPI operationIds, kept for
 * one release: each is the same function as its new name (same arguments, same answer).
 */
export interface DeprecatedMethods {
  /** The same function as `listRunEvents`. @deprecated Use `listRunEvents`; removed in the next release. */
  events: AgentRunsClient['listRunEvents'];
  /** The same function as `listRunCheckpoints`. @deprecated Use `listRunCheckpoints`; removed in the next release. */
  checkpoints: AgentRunsClient['listRunCheckpoints'];
  /** The same function as `getRunCheckpoint`. @deprecated Use `getRunCheckpoint`; removed in the next release. */
  checkpoint: AgentRunsClient['getRunCheckpoint'];
  /** The same function as `listRunChildren`. @deprecated Use `listRunChildren`; removed in the next release. */
  children: AgentRunsClient['listRunChildren'];
  /** The same function as `getRunState`. @deprecated Use `getRunState`; removed in the next release. */
  state: AgentRunsClient['getRunState'];
  /** The same function as `forkRun`. @deprecated Use `forkRun`; removed in the next release. */
  fork: AgentRunsClient['forkRun'];
  /** The same function as `applyControl`. @deprecated Use `applyControl`; removed in the next release. */
  control: AgentRunsClient['applyControl'];
  /** The same function as `deliverResult`. @deprecated Use `deliverResult`; removed in the next release. */
  deliver: AgentRunsClient['deliverResult'];
  /** The same function as `listTools`. @deprecated Use `listTools`; removed in the next release. */
  tools: AgentRunsClient['listTools'];
  /** The same function as `getHealth`. @deprecated Use `getHealth`; removed in the next release. */
  health: AgentRunsClient['getHealth'];
  /** The same function as `getOpenApiDocument`. @deprecated Use `getOpenApiDocument`; removed in the next release. */
  openapi: AgentRunsClient['getOpenApiDocument'];
  /** The same function as `reportOperationOutcome`. @deprecated Use `reportOperationOutcome`; removed in the next release. */
  reportOutcome: AgentRunsClient['reportOperationOutcome'];
  /** The same function as `getLease`. @deprecated Use `getLease`; removed in the next release. */
  lease: AgentRunsClient['getLease'];
}

/** The old names of `client`'s methods, bound to the same functions. */
export function deprecatedAliases(client: Omit<AgentRunsClient, keyof DeprecatedMethods>): DeprecatedMethods {
  return {
    events: client.listRunEvents,
    checkpoints: client.listRunCheckpoints,
    checkpoint: client.getRunCheckpoint,
    children: client.listRunChildren,
    state: client.getRunState,
    fork: client.forkRun,
    control: client.applyControl,
    deliver: client.deliverResult,
    tools: client.listTools,
    health: client.getHealth,
    openapi: client.getOpenApiDocument,
    reportOutcome: client.reportOperationOutcome,
    lease: client.getLease,
  };
}

// ---------------------------------------------------------------- implementation

export type { Call, CallFn } from './call.ts';

export { httpCaller } from './call.ts';

const enc = encodeURIComponent;
const runPath = (runId: string) => `/runs/${enc(runId)}`;
/** The run id a run's path is built from, checked with the routes' own schema. */
const runParams = (runId: string) => ({ schema: RunIdParams, values: { id: runId } });

function sendControl(
  call: CallFn,
  runId: string,
  input: ControlInput,
  opts: RunCallOptions = {},
): Promise<ControlAck> {
  const body = { ...input, control_id: input.control_id ?? globalThis.crypto.randomUUID() };
  return call({
    method: 'POST',
    path: `${runPath(runId)}/controls`,
    params: runParams(runId),
    json: body,
    capability: opts.capability,
    schema: ANSWERS.applyControl[200],
  });
}

/** Splits per-call options from control fields, dropping undefined ones. */
function controlOf<F extends Record<string, unknown>>(
  command: string,
  opts: ControlOptions & F,
  fields: (keyof F)[],
): [ControlInput, RunCallOptions] {
  const out: Record<string, unknown> = { command };
  if (opts.control_id !== undefined) out.control_id = opts.control_id;
  for (const f of fields) if (opts[f] !== undefined) out[f as string] = opts[f];
  return [out as ControlInput, opts.capability !== undefined ? { capability: opts.capability } : {}];
}

/** A GET of `rest` under one run's path (its id checked), with the run's capability. */
function readRun<T extends z.ZodType>(
  call: CallFn,
  runId: string,
  rest: string,
  capability: string | undefined,
  schema: T,
): Promise<z.infer<T>> {
  return call({
    method: 'GET',
    path: `${runPath(runId)}${rest}`,
    params: runParams(runId),
    capability,
    schema,
  });
}

/** The read methods (runs, events, checkpoints, state, children), create and fork. */
function runMethods(
  call: CallFn,
  events: () => AgentRunsClient['listRunEvents'],
): Pick<
  AgentRunsClient,
  | 'createRun'
  | 'getRun'
  | 'listRuns'
  | 'listRunEvents'
  | 'followEvents'
  | 'listRunCheckpoints'
  | 'listRunChildren'
  | 'getRunCheckpoint'
  | 'getRunState'
  | 'forkRun'
  | 'getRunAtSeq'
> {
  return {
    createRun: (input) =>
      call({ method: 'POST', path: '/runs', json: input, schema: ANSWERS.createRun[201] }),
    getRun: (runId, opts = {}) => readRun(call, runId, '', opts.capability, ANSWERS.getRun[200]),
    listRuns: (params) =>
      call({
        method: 'GET',
        path: '/runs',
        query: {
          status: params.status,
          subject_workspace: params.subject?.workspace,
          subject_path: params.subject?.path,
          limit: params.limit,
          cursor: params.cursor,
        },
        querySchema: ListRunsQuery,
        schema: ANSWERS.listRuns[200],
      }),
    listRunEvents: (runId, params = {}) =>
      call({
        method: 'GET',
        path: `${runPath(runId)}/events`,
        params: runParams(runId),
        query: { after: params.after, limit: params.limit, wait: params.wait },
        querySchema: EventsQuery,
        capability: params.capability,
        schema: ANSWERS.listRunEvents[200],
      }),
    async *followEvents(runId, params = {}) {
      let after = params.after ?? 0;
      const wait = params.wait ?? 20;
      while (params.signal?.aborted !== true) {
        let page: EventPage;
        try {
          page = await events()(runId, { ...params, after, wait });
        } catch (err) {
          // The caller holds as many open waits as the API allows: wait as told, then poll again.
          if (!(err instanceof ApiError && err.code === 'too_many_waits')) throw err;
          await pauseFor((err.retryAfterSeconds ?? 1) * 1000, params.signal);
          continue;
        }
        params.onPage?.(page);
        yield* page.events;
        after = page.next_after;
        if (page.settled && after >= page.last_seq) return;
      }
    },
    listRunCheckpoints: async (runId, opts = {}) =>
      (await readRun(call, runId, '/checkpoints', opts.capability, ANSWERS.listRunCheckpoints[200]))
        .checkpoints,
    listRunChildren: async (runId, opts = {}) =>
      (await readRun(call, runId, '/children', opts.capability, ANSWERS.listRunChildren[200])).children,
    getRunCheckpoint: (runId, n, opts = {}) =>
      call({
        method: 'GET',
        path: `${runPath(runId)}/checkpoints/${n}`,
        params: { schema: CheckpointParams, values: { id: runId, n } },
        capability: opts.capability,
        schema: ANSWERS.getRunCheckpoint[200],
      }),
    getRunState: (runId, opts = {}) =>
      call({
        method: 'GET',
        path: `${runPath(runId)}/state`,
        params: runParams(runId),
        query: { rev: opts.rev },
        querySchema: StateQuery,
        capability: opts.capability,
        schema: ANSWERS.getRunState[200],
      }),
    getRunAtSeq: (runId, seq, opts = {}) =>
      call({
        method: 'GET',
        path: `${runPath(runId)}/at/${seq}`,
        params: { schema: RunAtParams, values: { id: runId, seq } },
        capability: opts.capability,
        schema: ANSWERS.getRunAtSeq[200],
      }),
    forkRun: (runId, input, opts = {}) =>
      call({
        method: 'POST',
        path: `${runPath(runId)}/fork`,
        params: runParams(runId),
        json: input,
        capability: opts.capability,
        schema: ANSWERS.forkRun[201],
      }),
  };
}

/** The control methods (stop, pause, resume, steer, approve, answer) and result delivery. */
function controlMethods(
  call: CallFn,
): Pick<
  AgentRunsClient,
  'applyControl' | 'stop' | 'pause' | 'resume' | 'steer' | 'approve' | 'answer' | 'deliverResult'
> {
  return {
    applyControl: (runId, input, opts) => sendControl(call, runId, input, opts),
    stop: (runId, opts = {}) => sendControl(call, runId, ...controlOf('stop', opts, ['reason'])),
    pause: (runId, opts = {}) => sendControl(call, runId, ...controlOf('pause', opts, ['reason'])),
    resume: (runId, opts = {}) =>
      sendControl(call, runId, ...controlOf('resume', opts, ['budget_increase', 'accept_reducer_change'])),
    steer: (runId, input, opts = {}) =>
      sendControl(call, runId, ...controlOf('steer', { ...opts, input }, ['input', 'when_busy'])),
    approve: (runId, request_id, subject_digest, opts = {}) =>
      sendControl(
        call,
        runId,
        ...controlOf('approve', { ...opts, request_id, subject_digest }, [
          'request_id',
          'subject_digest',
          'decision',
          'reason',
        ]),
      ),
    answer: (runId, request_id, value, opts = {}) =>
      sendControl(
        call,
        runId,
        ...controlOf('provide_input', { ...opts, request_id, value }, ['request_id', 'value']),
      ),
    deliverResult: (resumeKey, result, opts = {}) =>
      call({
        method: 'POST',
        path: `/results/${enc(resumeKey)}`,
        params: { schema: ResumeKeyParams, values: { resume_key: resumeKey } },
        query: { delivery_id: opts.delivery_id },
        querySchema: DeliveryQuery,
        json: result === undefined ? null : result,
        capability: opts.capability,
        schema: Delivery,
      }),
  };
}

/** What `followSse` needs of the client's options: the API, the token and the fetch. */
function liveTarget(baseUrl: string, options: ClientOptions): LiveTarget {
  const doFetch = options.fetch;
  return {
    baseUrl,
    ...(options.token !== undefined ? { token: options.token } : {}),
    ...(doFetch !== undefined ? { fetch: async (request) => doFetch(request) } : {}),
  };
}

/**
 * Builds a client of the API at `options.baseUrl` (a trailing slash is dropped; a path prefix is
 * kept), sending `options.token` as a bearer token. Does no I/O until a method is called; never
 * throws itself.
 *
 * @example
 * import { createClient } from '@agent-runs/client';
 *
 * const client = createClient({
 *   baseUrl: process.env.AGENT_RUNS_URL ?? 'http://127.0.0.1:8787',
 *   token: process.env.AGENT_RUNS_TOKEN,
 * });
 * const { run } = await client.createRun({
 *   subject: { workspace: 'demo', path: '/notes/today' },
 *   reducer: null, // client-driven: your code drives it (drive.ts)
 * });
 */
export function createClient(options: ClientOptions): AgentRunsClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const call = httpCaller(baseUrl, options);
  const methods: Omit<AgentRunsClient, keyof DeprecatedMethods> = {
    baseUrl,
    ...(options.token !== undefined ? { token: options.token } : {}),
    ...runMethods(call, () => methods.listRunEvents),
    streamRunEvents: (runId, follow) => followSse(liveTarget(baseUrl, options), runId, follow),
    ...clientDrivenMethods(call),
    ...controlMethods(call),
    ...catalogMethods(call),
    ...registryMethods(call),
  };
  return { ...methods, ...deprecatedAliases(methods) };
}
