/**
 * Traces from the local stack: with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set,
 * a run created over HTTP on the scripted model is exported to a real OTLP/HTTP receiver (the
 * step handler flushes after each batch), and the stack's stop flushes what is left: a run
 * stopped over HTTP with no step poller, whose run span only the stop can export (the batch
 * processor's own delay is set far beyond the test).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../lib/client/index.ts';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { registerSampleTools } from '../../lib/local/sample-tools.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { createScriptedModel } from '../../lib/models/scripted.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { runTraceIds, shutdownTraces } from '../../lib/telemetry/otel.ts';
import { untilRun } from '../support/http-runs.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.ts';

let stack: LocalStack | undefined;
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
});
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
  await shutdownTraces();
});
afterAll(async () => {
  delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  await receiver.close();
});

async function start(pollerConcurrency?: number) {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    sweepIntervalMs: 60_000,
    consoleDir: false,
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: createScriptedModel() },
    registerTools: registerSampleTools,
    ...(pollerConcurrency !== undefined ? { pollerConcurrency } : {}),
  });
  const client = createClient({ baseUrl: stack.url, token: stack.token });
  const { run } = await client.createRun({
    subject: { workspace: 'traces', path: `/traces/${crypto.randomUUID()}` },
    reducer: { function_path: AGENT_LOOP_PATH },
    input: 'Echo from the local stack.',
    context: { mode: 'task', tools: [{ name: 'echo', mutating: false }] },
  });
  const ofRun = () => receiver.spans.filter((s) => s.attributes['agent_runs.run_id'] === run.run_id);
  return { client, runId: run.run_id, ofRun };
}

describe('the local stack with an OTLP endpoint', () => {
  it("exports a run's trace", async () => {
    const { client, runId, ofRun } = await start();
    const done = await untilRun(client, runId, (r) => r.status === 'completed');
    await stack?.stop();

    const spans = ofRun();
    const { traceId, spanId } = runTraceIds(runId);
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([traceId]));
    expect(spans.find((s) => s.spanId === spanId)?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'agent_runs.outcome': 'succeeded',
      'gen_ai.usage.output_tokens': done.usage.output_tokens,
    });
    expect(spans.filter((s) => s.name === 'chat local/scripted')).toHaveLength(2);
    expect(spans.filter((s) => s.name === 'execute_tool echo')).toHaveLength(1);
    expect(JSON.stringify(spans)).not.toContain('Echo from the local stack');
  });

  it('flushes on its stop the run span of a run a control ended', async () => {
    const { client, runId, ofRun } = await start(0);
    await client.stop(runId, { reason: 'no longer needed' });
    expect((await client.getRun(runId)).status).toBe('stopped');
    // The premise: no step ran and nothing flushed, so the run span waits in the batch processor.
    expect(ofRun()).toEqual([]);

    await stack?.stop();

    const spans = ofRun();
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({
      spanId: runTraceIds(runId).spanId,
      name: `invoke_agent ${AGENT_LOOP_PATH}`,
    });
    expect(spans[0]?.attributes).toMatchObject({ 'agent_runs.outcome': 'stopped' });
  });
});
