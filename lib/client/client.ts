/**
 * A typed TypeScript client of the HTTP API (lib/http): one method per route, control helpers
 * that generate a control_id when none is given, and `followEvents`, an async iterator over a
 * run's events built on long polling. Responses are parsed with the contracts' zod schemas;
 * every failure is an ApiError with the API's code. Browser-safe: only fetch, URL, Headers and
 * Web Crypto's `crypto.randomUUID` (Node 20+, browsers in secure contexts), no `node:*`.
 * Published as the `@agent-runs/client` package (packages/client). Issue 5, "lib/client and
 * bin/"; issue 13. The web console (console/) runs this same client in the browser (issue 17).
 */
import { z } from 'zod';
import {
  ControlAck,
  type CreateRunInput,
  type ForkRunInput,
  isTerminalStatus,
  PublishResult,
  RegistryEntryView,
  type RegistryKind,
  RegistryListing,
  type RunEvent,
  RunRecord,
  ToolDescriptor,
} from '../contracts/index.ts';
import { type CallFn, httpCaller, pauseFor } from './call.ts';
import { type ClientDrivenMethods, clientDrivenMethods } from './client-driven.ts';
import { ApiError } from './errors.ts';
import {
  ARTIFACT_MEDIA_TYPES,
  Checkpoint,
  ChildRun,
  type ClientOptions,
  type ControlInput,
  type ControlOptions,
  CreateRunResult,
  Delivery,
  EventPage,
  type EventsParams,
  type FollowParams,
  FunctionArtifact,
  FunctionSource,
  type ListRunsParams,
  RunAtSeq,
  type RunCallOptions,
  RunPage,
  StateRevision,
} from './shapes.ts';

const Health = z.object({ status: z.literal('ok') });
const Document = z.record(z.string(), z.unknown());

/**
 * The typed client of the HTTP API, made by `createClient`: one method per route. Every method
 * resolves with the answer parsed with its documented schema, and rejects with an `ApiError`:
 * the API's `code` and HTTP `status` (`run_not_found` 404, `validation_failed` 400 naming the
 * field in `details`, ...), `unreachable` (status 0) when there was no answer, or
 * `invalid_response` when the answer does not have the documented shape. Methods that name a
 * run send the client's (or the call's) control capability.
 */
export interface AgentRunsClient extends ClientDrivenMethods {
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
  getRun(runId: string, options?: RunCallOptions): Promise<RunRecord>;
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
   * const page = await client.events(runId, { after: 0, limit: 100, wait: 10 });
   * for (const event of page.events) console.log(event.seq, event.kind);
   * const next = await client.events(runId, { after: page.next_after });
   */
  events(runId: string, params?: EventsParams): Promise<EventPage>;
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
  /** The run's checkpoints, oldest first. */
  checkpoints(runId: string, options?: RunCallOptions): Promise<Checkpoint[]>;
  /** Checkpoint number `n` of the run. Errors: `checkpoint_not_found` (404). */
  checkpoint(runId: string, n: number, options?: RunCallOptions): Promise<Checkpoint>;
  /** The child runs `runId` delegated to, oldest first. */
  children(runId: string, options?: RunCallOptions): Promise<ChildRun[]>;
  /** A domain state revision (default: the current one); revisions are write-once. */
  state(runId: string, options?: RunCallOptions & { rev?: number }): Promise<StateRevision>;
  /**
   * `POST /admin/reducers/check` (admin): checks an artifact against stored runs server-side;
   * the answer is `{artifact, runs, totals, truncated}` (lib/replay/check-runs.ts).
   */
  checkReducer(body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** The run as it stood at `seq` (time travel: from its log and stored states, no new run). */
  runAt(runId: string, seq: number, options?: RunCallOptions): Promise<RunAtSeq>;
  /**
   * Creates a run from checkpoint `input.checkpoint` of `runId` (optionally with an edited
   * `state` and `input`), owned by the caller; `created: false` for a create_key replay.
   *
   * @example
   * const [first] = await client.checkpoints(runId);
   * if (first !== undefined) {
   *   const { run } = await client.fork(runId, { checkpoint: first.n, input: 'Try again, shorter.' });
   *   console.log(run.run_id);
   * }
   */
  fork(runId: string, input: ForkRunInput, options?: RunCallOptions): Promise<CreateRunResult>;
  /**
   * Sends any control (`POST /runs/{id}/controls`; `command` names it), with a fresh
   * `control_id` when none is given. Resolves with the ack: `{ack: 'applied', seq}`,
   * `{ack: 'duplicate', original_seq}` (this control_id was applied before) or
   * `{ack: 'rejected', reason, seq}` (recorded, not applied: `already_paused`, `run_busy`, ...).
   * Errors: `run_terminal` (409), `validation_failed` (400).
   *
   * @example
   * const ack = await client.control(runId, { command: 'pause', reason: 'maintenance' });
   * if (ack.ack === 'rejected') console.log(ack.reason); // e.g. already_paused
   */
  control(runId: string, control: ControlInput, options?: RunCallOptions): Promise<ControlAck>;
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
   * const delivery = await client.deliver('rk-from-the-request', { ok: true }, { delivery_id: 'hook-42' });
   * if (delivery.ack === 'held') console.log('held until', delivery.expires_at);
   */
  deliver(
    resumeKey: string,
    result: unknown,
    options?: RunCallOptions & { delivery_id?: string },
  ): Promise<Delivery>;
  /** The registered tools (`GET /v1/tools`): metadata only, never handlers or credentials. */
  tools(): Promise<ToolDescriptor[]>;
  /** Registers an artifact (admin): `functionPath` starts with `/`; `kind` picks the Content-Type. */
  putFunction(
    functionPath: string,
    bytes: Uint8Array,
    kind: FunctionArtifact['kind'],
  ): Promise<FunctionArtifact>;
  /** The artifact at `functionPath` now, with its bytes (admin, `GET /functions/{path}`). Errors: `function_not_found` (404). */
  getFunction(functionPath: string): Promise<FunctionArtifact & { bytes: Uint8Array }>;
  /** `GET /health` (no token needed): `{status: 'ok'}` when the API answers. */
  health(): Promise<{ status: 'ok' }>;
  /** The API's OpenAPI 3.1 document (`GET /openapi.json`). */
  openapi(): Promise<Record<string, unknown>>;
  /**
   * Publishes a tool, the policy or an agent as a new immutable version (admin): `POST
   * /admin/{kind}`. `created: false` when the same document was already published.
   */
  publishEntry(kind: RegistryKind, document: unknown): Promise<PublishResult>;
  /** The current registry version of `kind` and its documents (admin). */
  listEntries(kind: RegistryKind): Promise<RegistryListing>;
  /** One published version (default: the current one) and every version of `name` (admin). */
  getEntry(kind: RegistryKind, name: string, version?: string): Promise<RegistryEntryView>;
}

// ---------------------------------------------------------------- implementation

export type { Call, CallFn } from './call.ts';

export { httpCaller } from './call.ts';

const enc = encodeURIComponent;
const runPath = (runId: string) => `/runs/${enc(runId)}`;

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
    json: body,
    capability: opts.capability,
    schema: ControlAck,
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

/** The read methods (runs, events, checkpoints, state, children), create and fork. */
function runMethods(
  call: CallFn,
  events: () => AgentRunsClient['events'],
): Pick<
  AgentRunsClient,
  | 'createRun'
  | 'getRun'
  | 'listRuns'
  | 'events'
  | 'followEvents'
  | 'checkpoints'
  | 'children'
  | 'checkpoint'
  | 'state'
  | 'fork'
  | 'runAt'
> {
  return {
    createRun: (input) => call({ method: 'POST', path: '/runs', json: input, schema: CreateRunResult }),
    getRun: (runId, opts = {}) =>
      call({ method: 'GET', path: runPath(runId), capability: opts.capability, schema: RunRecord }),
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
        schema: RunPage,
      }),
    events: (runId, params = {}) =>
      call({
        method: 'GET',
        path: `${runPath(runId)}/events`,
        query: { after: params.after, limit: params.limit, wait: params.wait },
        capability: params.capability,
        schema: EventPage,
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
        // An older server sends no `settled`: the terminal status is then the end.
        const ended = page.settled ?? isTerminalStatus(page.status);
        if (ended && after >= page.last_seq) return;
      }
    },
    checkpoints: async (runId, opts = {}) =>
      (
        await call({
          method: 'GET',
          path: `${runPath(runId)}/checkpoints`,
          capability: opts.capability,
          schema: z.object({ checkpoints: z.array(Checkpoint) }),
        })
      ).checkpoints,
    children: async (runId, opts = {}) =>
      (
        await call({
          method: 'GET',
          path: `${runPath(runId)}/children`,
          capability: opts.capability,
          schema: z.object({ children: z.array(ChildRun) }),
        })
      ).children,
    checkpoint: (runId, n, opts = {}) =>
      call({
        method: 'GET',
        path: `${runPath(runId)}/checkpoints/${n}`,
        capability: opts.capability,
        schema: Checkpoint,
      }),
    state: (runId, opts = {}) =>
      call({
        method: 'GET',
        path: `${runPath(runId)}/state`,
        query: { rev: opts.rev },
        capability: opts.capability,
        schema: StateRevision,
      }),
    runAt: (runId, seq, opts = {}) =>
      call({
        method: 'GET',
        path: `${runPath(runId)}/at/${seq}`,
        capability: opts.capability,
        schema: RunAtSeq,
      }),
    fork: (runId, input, opts = {}) =>
      call({
        method: 'POST',
        path: `${runPath(runId)}/fork`,
        json: input,
        capability: opts.capability,
        schema: CreateRunResult,
      }),
  };
}

/** The control methods (stop, pause, resume, steer, approve, answer) and result delivery. */
function controlMethods(
  call: CallFn,
): Pick<
  AgentRunsClient,
  'control' | 'stop' | 'pause' | 'resume' | 'steer' | 'approve' | 'answer' | 'deliver'
> {
  return {
    control: (runId, input, opts) => sendControl(call, runId, input, opts),
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
    deliver: (resumeKey, result, opts = {}) =>
      call({
        method: 'POST',
        path: `/results/${enc(resumeKey)}${opts.delivery_id !== undefined ? `?delivery_id=${enc(opts.delivery_id)}` : ''}`,
        json: result === undefined ? null : result,
        capability: opts.capability,
        schema: Delivery,
      }),
  };
}

/** The catalogue methods (tools, function artifacts) and the public routes. */
function catalogMethods(
  call: CallFn,
): Pick<AgentRunsClient, 'tools' | 'putFunction' | 'getFunction' | 'checkReducer' | 'health' | 'openapi'> {
  const functionRoute = (functionPath: string) =>
    `/functions/${functionPath.slice(1).split('/').map(enc).join('/')}`;
  return {
    tools: async () =>
      (await call({ method: 'GET', path: '/v1/tools', schema: z.object({ tools: z.array(ToolDescriptor) }) }))
        .tools,
    putFunction: (functionPath, bytes, kind) => {
      if (!functionPath.startsWith('/')) {
        return Promise.reject(
          new ApiError('validation_failed', 0, `function path must start with "/": ${functionPath}`),
        );
      }
      return call({
        method: 'PUT',
        path: functionRoute(functionPath),
        body: { bytes, contentType: ARTIFACT_MEDIA_TYPES[kind] },
        schema: FunctionArtifact,
      });
    },
    getFunction: async (functionPath) => {
      if (!functionPath.startsWith('/'))
        throw new ApiError('validation_failed', 0, `function path must start with "/": ${functionPath}`);
      const found = await call({ method: 'GET', path: functionRoute(functionPath), schema: FunctionSource });
      const { bytes_base64, ...artifact } = found;
      return { ...artifact, bytes: Uint8Array.from(atob(bytes_base64), (ch) => ch.charCodeAt(0)) };
    },
    checkReducer: (body) =>
      call({ method: 'POST', path: '/admin/reducers/check', json: body, schema: Document }),
    health: () => call({ method: 'GET', path: '/health', schema: Health }),
    openapi: () => call({ method: 'GET', path: '/openapi.json', schema: Document }),
  };
}

function registryMethods(call: CallFn): Pick<AgentRunsClient, 'publishEntry' | 'listEntries' | 'getEntry'> {
  return {
    publishEntry: (kind, document) =>
      call({ method: 'POST', path: `/admin/${kind}`, json: document, schema: PublishResult }),
    listEntries: (kind) => call({ method: 'GET', path: `/admin/${kind}`, schema: RegistryListing }),
    getEntry: (kind, name, version) =>
      call({
        method: 'GET',
        path: `/admin/${kind}/entry`,
        query: { name, version },
        schema: RegistryEntryView,
      }),
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
  const client: AgentRunsClient = {
    baseUrl,
    ...(options.token !== undefined ? { token: options.token } : {}),
    ...runMethods(call, () => client.events),
    ...clientDrivenMethods(call),
    ...controlMethods(call),
    ...catalogMethods(call),
    ...registryMethods(call),
  };
  return client;
}
