/**
 * The language-model middleware of a durable agent: each model call is one `model_turn`
 * operation of the run. A call the run recorded is answered from the record, without calling the
 * provider; any other is begun, sent to the model (with the steers taken at this boundary added
 * to its prompt), recorded, and only then handed to the agent. `streamText` works too: the
 * recorded result is replayed as a stream (simulateStreamingMiddleware), so tokens arrive once the
 * turn is recorded, not as the provider produces them. docs/contracts/run-lifecycle.md,
 * "Operations", "Controls".
 */
import { APICallError, type LanguageModelMiddleware, simulateStreamingMiddleware } from 'ai';
import type { ClientOperationResult } from '../contracts/index.ts';
import { DurableAgentError } from './errors.ts';
import type { RecordedResult } from './journal.ts';
import {
  type CallOptions,
  type GenerateResult,
  generateResultOf,
  modelTurnReport,
  modelTurnRequest,
  type SteerInsertions,
} from './model-turn.ts';
import type { OperationRunner } from './operation-runner.ts';

/** What the middleware works with while a run is driven: its operations and where its steers go. */
export interface ActiveRun {
  readonly runner: OperationRunner;
  readonly steers: SteerInsertions;
}

type Model = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0]['model'];

/** What a model's failure is recorded as: retryable when the AI SDK would retry it (an APICallError that says so). */
function modelFailure(err: unknown): ClientOperationResult {
  return {
    kind: 'operation_failed',
    error_class: 'model_error',
    retryable: APICallError.isInstance(err) && err.isRetryable,
    outcome_unknown: false,
    message: err instanceof Error ? err.message : String(err),
  };
}

/** What the agent sees of a recorded model turn: the generate result, or the recorded failure as an APICallError. */
function seen(result: RecordedResult, runId: string): GenerateResult {
  if (result.kind === 'model_turn_completed') return generateResultOf(result.data);
  if (result.kind === 'operation_failed')
    throw new APICallError({
      message: result.data.message,
      url: `agent-runs:${runId}`,
      requestBodyValues: {},
      isRetryable: result.data.retryable,
    });
  throw new DurableAgentError('replay_mismatch', `a model turn was recorded as ${result.kind}`, { runId });
}

/** One model call as an operation of the active run. */
async function durableGenerate(active: ActiveRun, runId: string, params: CallOptions, model: Model) {
  const performed = await active.runner.perform(
    { kind: 'model_turn', begin: { kind: 'model_turn', request: modelTurnRequest(params) } },
    async (signal, steers) => {
      const prompt = active.steers.apply(params.prompt, steers);
      const abortSignal = params.abortSignal ? AbortSignal.any([params.abortSignal, signal]) : signal;
      try {
        return modelTurnReport(await model.doGenerate({ ...params, prompt, abortSignal }));
      } catch (err) {
        if (signal.aborted) throw err;
        return modelFailure(err);
      }
    },
  );
  // A replayed turn's steers still belong in every later prompt.
  if (performed.replayed) active.steers.apply(params.prompt, performed.steers);
  return seen(performed.result, runId);
}

/**
 * The middleware, bound to whichever run `active()` names (DurableAgentError `not_running`
 * when none: the model was called outside `DurableAgent.run`).
 */
export function durableMiddleware(active: () => { run: ActiveRun; runId: string }): LanguageModelMiddleware {
  const streaming = simulateStreamingMiddleware();
  const wrapStream = streaming.wrapStream;
  if (wrapStream === undefined) throw new Error('simulateStreamingMiddleware has no wrapStream');
  return {
    specificationVersion: 'v4',
    wrapGenerate: async ({ params, model }) => {
      const { run, runId } = active();
      return durableGenerate(run, runId, params, model);
    },
    wrapStream: async (options) => {
      const { run, runId } = active();
      return wrapStream({
        ...options,
        doGenerate: () => durableGenerate(run, runId, options.params, options.model),
      });
    },
  };
}
