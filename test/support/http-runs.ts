/** Helpers for tests that drive runs over HTTP with the typed client (e2e). */
import type { AgentRunsClient } from '../../lib/client/index.ts';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { until } from './local-runtime.ts';

/**
 * Reads the run every 100 ms until `done` holds and returns it. Throws, with the last record,
 * when `timeoutMs` passes first.
 */
export async function untilRun(
  client: AgentRunsClient,
  runId: string,
  done: (run: RunRecord) => boolean,
  timeoutMs = 20_000,
): Promise<RunRecord> {
  return until(() => client.getRun(runId), done, timeoutMs);
}
