/**
 * Traces from the local stack (issue 28, point 3): with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set,
 * a run created over HTTP on the scripted model is exported to a real OTLP/HTTP receiver, and the
 * stack's stop flushes the spans: the batch processor's own delay is set far beyond the test, so
 * nothing arrives before the stop and the whole tree arrives with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
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
let client: AgentRunsClient;
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    sweepIntervalMs: 1_000,
    consoleDir: false,
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: createScriptedModel() },
    registerTools: registerSampleTools,
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await shutdownTraces();
  delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  await receiver.close();
});

describe('the local stack with an OTLP endpoint', () => {
  it("exports a run's trace, flushed by the stack's stop", async () => {
    const { run } = await client.createRun({
      subject: { workspace: 'traces', path: `traces/${crypto.randomUUID()}` },
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'Echo from the local stack.',
      context: { mode: 'task', tools: [{ name: 'echo', mutating: false }] },
    });
    const done = await untilRun(client, run.run_id, (r) => r.status === 'completed');
    const ofRun = () => receiver.spans.filter((s) => s.attributes['agent_runs.run_id'] === run.run_id);
    // The premise: the batch processor's delay holds every span until a flush.
    expect(ofRun()).toEqual([]);

    await stack?.stop();
    stack = undefined;

    const spans = ofRun();
    const { traceId, spanId } = runTraceIds(run.run_id);
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
});
