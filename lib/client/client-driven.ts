/**
 * The client-driven routes in the typed client: take and renew the lease, begin and report
 * operations (a result or a turn outcome), open requests, take steers, end the run, let the
 * lease go, inspect the lease. Every write sends the fence; a lost lease is ApiError
 * `fenced_out` (409). `drive` (drive.ts) builds the whole loop on these.
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs".
 */
import type { z } from 'zod';
import { RunIdParams } from '../contracts/http-params.ts';
import type {
  BeginOperationResponse,
  ClientOperationResult,
  ClientWriteResponse,
  Fence,
  LeaseResponse,
  LeaseView,
  OpenRequestInput,
  OpenRequestResponse,
  ReportOutcomeResponse,
  TakeSteersResponse,
} from '../contracts/index.ts';
import type { CallFn } from './call.ts';
import { OPERATION_ANSWERS as ANSWERS } from './operations.ts';

/** What every client-driven write answers: `{run, lease}`, the run after the write and the lease (null once let go or the run ended). */
export type ClientWrite = ClientWriteResponse;
/**
 * `GET /runs/{id}/lease`: whether the run is client-driven, its status and epoch, the lease
 * (`{owner, epoch, expires_at}`, ms epoch) or null, `expires_in_ms` (null without a lease), the
 * operation in flight, and how many steers are queued and requests open.
 */
export type { LeaseView };

/**
 * The client-driven routes, on `AgentRunsClient`. Every write but `takeLease` carries the fence
 * `{owner, epoch}` of the lease taken. Errors common to all: `run_not_found` (404),
 * `not_client_driven` (409, the run has a reducer), `fenced_out` (409, the lease was lost:
 * expiry, takeover, stop, pause), `run_terminal` (409), `invalid_state` (409, `details.reason`),
 * `validation_failed` (400).
 */
export interface ClientDrivenMethods {
  /**
   * Takes the lease as `owner` (or renews `{owner, epoch}`); `ttl_ms` 1 000..900 000 (default
   * 90 000). Resolves with `{lease: {owner, epoch, expires_at}, run}`. Errors: `lease_held`
   * (409, another owner holds it until `details.expires_at`), `fenced_out` (409, a renewal of a
   * lease that was lost).
   */
  takeLease(runId: string, body: { owner: string; epoch?: number; ttl_ms?: number }): Promise<LeaseResponse>;
  /** Lets the lease go (the run waits, queued or behind its open requests, for a client; another may take it at once). */
  releaseLease(runId: string, fence: Fence): Promise<ClientWrite>;
  /**
   * Begins an operation the client executes itself: `kind` `model_turn`, `tool_call` (with
   * `request: {tool, args, mutating}` and `replay_safe`), `compaction` or `custom` (with `name`).
   * Resolves with the operation in flight (`op_id`), the same one when repeated before its
   * outcome, or `operation: null` when a budget paused or failed the run instead.
   */
  beginOperation(
    runId: string,
    body: Record<string, unknown> & { fence: Fence; kind: string },
  ): Promise<BeginOperationResponse>;
  /**
   * Reports how operation `op_id` ended, exactly one of `result` (`model_turn_completed` with
   * `usage` {input_tokens, output_tokens}, `tool_result`, `operation_failed`,
   * `operation_cancelled`) or `turn_outcome` (an agent.external-runtime.turn-outcome.v1
   * document). Resolves with the seq of the event it recorded. Errors: `turn_outcome_refused`
   * (409, `details.reason_code`: `binding-mismatch` when binding/ref is not the run id,
   * `event-stale` when turn/ref is not the operation in flight, `usage-missing`, ...).
   */
  reportOperationOutcome(
    runId: string,
    body: { fence: Fence; op_id: string } & (
      | { result: z.input<typeof ClientOperationResult> }
      | { turn_outcome: Record<string, unknown> }
    ),
  ): Promise<ReportOutcomeResponse>;
  /** Opens an approval or a question between operations (the run waits); resolves with its `request_id`. */
  openRequest(
    runId: string,
    fence: Fence,
    request: OpenRequestInput['request'],
  ): Promise<OpenRequestResponse>;
  /**
   * Takes the queued steers, oldest first (`{steer_id, input, seq}`). Throws ApiError 409
   * `no_steer` when none is queued (read `queued_steers` on the run first, as `drive` does).
   */
  takeSteers(runId: string, fence: Fence): Promise<TakeSteersResponse>;
  /** Ends the run `completed` (outcome default `succeeded`), with an optional summary; the lease ends with it. */
  completeRun(
    runId: string,
    fence: Fence,
    body?: { outcome?: 'succeeded' | 'partial' | 'blocked'; summary?: string },
  ): Promise<ClientWrite>;
  /** Ends the run `failed` with the caller's error `code`; the lease ends with it. */
  failRun(runId: string, fence: Fence, code: string): Promise<ClientWrite>;
  /** Who holds the lease of a run, at which epoch, until when (`agent-runs lease RUN`). */
  getLease(runId: string): Promise<LeaseView>;
}

const path = (runId: string, rest: string) => `/runs/${encodeURIComponent(runId)}${rest}`;
/** The run id the path is built from, checked with the routes' own schema. */
const runParams = (runId: string) => ({ schema: RunIdParams, values: { id: runId } });

/** The client-driven methods on `call` (mixed into the client by `createClient`). */
export function clientDrivenMethods(call: CallFn): ClientDrivenMethods {
  const post = <T extends z.ZodType>(runId: string, rest: string, json: unknown, schema: T) =>
    call({ method: 'POST', path: path(runId, rest), params: runParams(runId), json, schema });
  return {
    takeLease: (runId, body) => post(runId, '/lease', body, ANSWERS.takeLease[200]),
    releaseLease: (runId, fence) => post(runId, '/lease/release', { fence }, ANSWERS.releaseLease[200]),
    beginOperation: (runId, body) => post(runId, '/operations', body, ANSWERS.beginOperation[200]),
    reportOperationOutcome: (runId, body) =>
      post(runId, '/operations/outcome', body, ANSWERS.reportOperationOutcome[200]),
    openRequest: (runId, fence, request) =>
      post(runId, '/requests', { fence, request }, ANSWERS.openRequest[200]),
    takeSteers: (runId, fence) => post(runId, '/steers/take', { fence }, ANSWERS.takeSteers[200]),
    completeRun: (runId, fence, body = {}) =>
      post(runId, '/complete', { fence, ...body }, ANSWERS.completeRun[200]),
    failRun: (runId, fence, code) => post(runId, '/fail', { fence, code }, ANSWERS.failRun[200]),
    getLease: (runId) =>
      call({
        method: 'GET',
        path: path(runId, '/lease'),
        params: runParams(runId),
        schema: ANSWERS.getLease[200],
      }),
  };
}
