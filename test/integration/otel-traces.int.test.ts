/**
 * OpenTelemetry traces of a run: a default-reducer run on the scripted model
 * calls echo and completes, with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT pointing at a real OTLP/HTTP
 * receiver in this process. The received tree: the run span (ids derived from the run id), its
 * step spans, and under them the model turns and the tool call with the GenAI attributes; no
 * payload text unless AGENT_RUNS_OTEL_CAPTURE_CONTENT=true; the step handler's flush; a child
 * run's span linked to its parent's.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_TURN_FUNCTION, DELEGATE_TOOL } from '../../lib/contracts/index.ts';
import { createCountingMetrics, SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createStepBatchHandler } from '../../lib/handlers/step-batch.ts';
import { toRecord } from '../../lib/local/poller.ts';
import { registerSampleTools } from '../../lib/local/sample-tools.ts';
import { createModelHost } from '../../lib/models/host.ts';
import { createScriptedModel } from '../../lib/models/scripted.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { builtInFunctions } from '../../lib/runtime.ts';
import { createSandboxReducerHost } from '../../lib/sandbox/index.ts';
import { createMemoryRegistryStore } from '../../lib/store/memory-registry-store.ts';
import { flushTraces, runTraceIds, shutdownTraces } from '../../lib/telemetry/otel.ts';
import { createAuditLog } from '../../lib/tools/audit-log.ts';
import { createCatalogueToolHost } from '../../lib/tools/catalogue-host.ts';
import { createToolRegistry } from '../../lib/tools/registry.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.ts';
import { delegator } from '../support/reducers.ts';

const reducers = createSandboxReducerHost({ registry: builtInFunctions() });
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
});
afterEach(async () => {
  await shutdownTraces();
  delete process.env.AGENT_RUNS_OTEL_CAPTURE_CONTENT;
});
afterAll(async () => {
  delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  await Promise.all([receiver.close(), reducers.close()]);
});

const INPUT = 'Echo hello from the trace test.';

/** An engine on the scripted model and the sample tools, with one echo run created. */
async function createEchoRun() {
  const code = createToolRegistry();
  registerSampleTools(code);
  const registries = createMemoryRegistryStore();
  const tools = createCatalogueToolHost({
    code,
    codePolicy: [],
    registries,
    audit: createAuditLog(() => {}),
    secrets: async () => 'unused',
  });
  const models = createModelHost({
    functions: { [DEFAULT_MODEL_TURN_FUNCTION]: createScriptedModel() },
    default: DEFAULT_MODEL_TURN_FUNCTION,
  });
  const t = await makeMemoryTestEngine({ reducers, tools, models, registries });
  const { run } = await t.engine.createRun(
    {
      subject: uniqueSubject(),
      reducer: { function_path: AGENT_LOOP_PATH },
      input: INPUT,
      context: { mode: 'task', tools: [{ name: 'echo', mutating: false }] },
    },
    alice,
  );
  return { t, runId: run.run_id };
}

/** Runs one echo run to its end on the scripted model; returns its id and final record. */
async function echoRun() {
  const { t, runId } = await createEchoRun();
  for (let i = 0; i < 10; i++) {
    const ids = await t.drainMessages();
    if (ids.length === 0) break;
    for (const id of ids) await t.engine.stepRun(id);
  }
  const done = await t.engine.getRun(runId, alice);
  expect(done.status).toBe('completed');
  await flushTraces();
  return { runId, done };
}

/** The spans of one trace, by kind. */
function treeOf(runId: string) {
  const ids = runTraceIds(runId);
  const spans = receiver.spans.filter((s) => s.attributes['agent_runs.run_id'] === runId);
  const named = (prefix: string) => spans.filter((s) => s.name.startsWith(prefix));
  return {
    ids,
    spans,
    run: named('invoke_agent'),
    steps: named('agent_runs.step'),
    chats: named('chat'),
    tools: named('execute_tool'),
  };
}

const childOf = (span: ReceivedSpan, parents: ReceivedSpan[]) =>
  parents.some((p) => p.spanId === span.parentSpanId);

describe('OpenTelemetry traces of a run', () => {
  it('exports the run span, its steps, and the model turns and tool call under them', async () => {
    const { runId, done } = await echoRun();
    const tree = treeOf(runId);
    expect(receiver.refused).toEqual([]);
    expect(receiver.services).toContain('agent-runs');

    // One trace, its id derived from the run id; one run span with its derived span id.
    expect(tree.spans.length).toBeGreaterThanOrEqual(5);
    expect(new Set(tree.spans.map((s) => s.traceId))).toEqual(new Set([tree.ids.traceId]));
    expect(tree.run).toHaveLength(1);
    const run = tree.run[0] as ReceivedSpan;
    expect(run).toMatchObject({
      spanId: tree.ids.spanId,
      parentSpanId: undefined,
      name: `invoke_agent ${AGENT_LOOP_PATH}`,
    });
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': AGENT_LOOP_PATH,
      'agent_runs.outcome': 'succeeded',
      'agent_runs.seq': done.last_seq,
      'gen_ai.usage.input_tokens': done.usage.input_tokens,
      'gen_ai.usage.output_tokens': done.usage.output_tokens,
      'agent_runs.usage.tool_calls': 1,
    });
    expect(run.startMs).toBe(done.created_at);

    // Every step hangs from the run span; every operation from a step.
    expect(tree.steps.length).toBeGreaterThanOrEqual(1);
    for (const step of tree.steps) {
      expect(step.parentSpanId).toBe(tree.ids.spanId);
      expect(step.attributes['agent_runs.epoch']).toEqual(expect.any(Number));
    }
    expect(tree.steps.some((s) => s.attributes['agent_runs.outcome'] === 'progressed')).toBe(true);

    expect(tree.chats).toHaveLength(2);
    for (const chat of tree.chats) {
      expect(childOf(chat, tree.steps)).toBe(true);
      expect(chat.name).toBe('chat local/scripted');
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'local/scripted',
        'gen_ai.provider.name': 'local',
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'agent_runs.outcome': 'model_turn_completed',
      });
    }
    const chatTokens = tree.chats.reduce((n, c) => n + Number(c.attributes['gen_ai.usage.input_tokens']), 0);
    expect(chatTokens).toBe(done.usage.input_tokens);
    expect(tree.chats.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual(
      expect.arrayContaining([['tool_calls'], ['stop']]),
    );

    expect(tree.tools).toHaveLength(1);
    const tool = tree.tools[0] as ReceivedSpan;
    expect(childOf(tool, tree.steps)).toBe(true);
    expect(tool.name).toBe('execute_tool echo');
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'echo',
      'gen_ai.tool.call.id': expect.stringMatching(/^scripted-/),
      'agent_runs.outcome': 'succeeded',
    });
  });

  it('carries no payload text by default', async () => {
    const { runId, done } = await echoRun();
    const tree = treeOf(runId);
    // The premise: the run's payloads hold the text, and spans were received.
    expect(done).toMatchObject({ summary: expect.stringContaining(INPUT) });
    expect(tree.spans.length).toBeGreaterThanOrEqual(5);
    const text = JSON.stringify(tree.spans.map((s) => s.attributes));
    expect(text).not.toContain('Echo hello');
    expect(text).not.toContain('gen_ai.input.messages');
    expect(text).not.toContain('gen_ai.tool.call.arguments');
  });

  it('carries the messages, tool arguments and results with AGENT_RUNS_OTEL_CAPTURE_CONTENT=true', async () => {
    process.env.AGENT_RUNS_OTEL_CAPTURE_CONTENT = 'true';
    const { runId } = await echoRun();
    const tree = treeOf(runId);
    const tool = tree.tools[0] as ReceivedSpan;
    expect(JSON.parse(String(tool.attributes['gen_ai.tool.call.arguments']))).toEqual({ text: INPUT });
    expect(String(tool.attributes['gen_ai.tool.call.result'])).toContain(INPUT);
    const first = tree.chats.find(
      (c) => c.attributes['gen_ai.response.finish_reasons']?.toString() === 'tool_calls',
    );
    // The GenAI conventions' message shape: {role, parts}.
    expect(JSON.parse(String(first?.attributes['gen_ai.input.messages']))).toEqual(
      expect.arrayContaining([
        { role: 'user', parts: [{ type: 'text', content: expect.stringContaining(INPUT) }] },
      ]),
    );
    expect(String(first?.attributes['gen_ai.output.messages'])).toContain('tool_call');
    expect(String(tree.run[0]?.attributes['agent_runs.summary'])).toContain(INPUT);
  });

  it('exports the spans of a step batch before the Lambda handler returns', async () => {
    // The batch processor's own delay is far beyond the test: only the handler's flush exports.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
    try {
      const { t, runId } = await createEchoRun();
      const handler = createStepBatchHandler({
        engine: t.engine,
        logger: SILENT_LOG,
        metrics: createCountingMetrics(),
      });
      const body = JSON.stringify({ run_id: runId });
      await t.drainMessages();
      const response = await handler({
        Records: [
          toRecord({ MessageId: 'm1', ReceiptHandle: 'h1', Body: body }, 'arn:aws:sqs:local:0:q', 'local'),
        ],
      });
      expect(response.batchItemFailures).toEqual([]);
      const steps = treeOf(runId).steps;
      expect(steps).toHaveLength(1);
      expect(steps[0]?.attributes['agent_runs.outcome']).toBe('progressed');
    } finally {
      delete process.env.OTEL_BSP_SCHEDULE_DELAY;
    }
  });

  it("links a child run's span to its parent's, and marks a failed run an error", async () => {
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/delegator': delegator(DELEGATE_TOOL) }),
      tools: inProcessTools({}),
      models: scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' })),
    });
    const { run } = await t.engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: '/r/delegator' },
        input: { children: [{ input: { leaf: 'complete' } }, { input: { leaf: 'fail' } }] },
      },
      alice,
    );
    for (let i = 0; i < 40; i++) {
      const ids = await t.drainMessages();
      if (ids.length === 0) break;
      for (const id of new Set(ids)) await t.engine.stepRun(id);
    }
    expect((await t.engine.getRun(run.run_id, alice)).status).toBe('completed');
    await flushTraces();

    const parent = runTraceIds(run.run_id);
    const delegations = treeOf(run.run_id).tools;
    expect(delegations.map((s) => s.attributes['gen_ai.tool.name'])).toEqual([DELEGATE_TOOL, DELEGATE_TOOL]);
    const children = receiver.spans.filter(
      (s) => s.attributes['agent_runs.parent_run_id'] === run.run_id && s.name.startsWith('invoke_agent'),
    );
    expect(children).toHaveLength(2);
    for (const child of children) {
      expect(child.traceId).not.toBe(parent.traceId);
      expect(child.links).toEqual([
        expect.objectContaining({ traceId: parent.traceId, spanId: parent.spanId }),
      ]);
    }
    const failed = children.find((c) => c.attributes['agent_runs.outcome'] === 'failed');
    expect(failed?.statusCode).toBe(2); // STATUS_CODE_ERROR
    expect(failed?.attributes['error.type']).toBe(failed?.attributes['agent_runs.terminal_reason']);
    expect(children.find((c) => c.attributes['agent_runs.outcome'] === 'succeeded')?.statusCode).toBe(0);
  });
});
