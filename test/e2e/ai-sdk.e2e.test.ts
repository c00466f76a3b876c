/**
 * End to end over HTTP: the AI SDK example agent (examples/ai-sdk/refund-agent.ts, a real
 * process on the local stack) is killed with SIGKILL mid-run and started again with the same
 * key. It resumes the same run, replays the recorded model turns without sending them to the
 * model again, never runs the not-replay-safe refund twice (the ledger file counts the side
 * effects), and the model sees the refund's outcome_unknown instead. A crash inside the
 * replay-safe tool runs that tool again. docs/contracts/run-lifecycle.md, "Leases, recovery and the
 * sweeper", "Operations".
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DurableAgentError, durableAgent } from '../../lib/ai-sdk/index.ts';
import { type AgentRunsClient, createClient, type RunEvent } from '../../lib/client/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';

const AGENT = fileURLToPath(new URL('../../examples/ai-sdk/refund-agent.ts', import.meta.url));

let stack: LocalStack;
let client: AgentRunsClient;
let work: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    sweepIntervalMs: 300,
    clockSkewMs: 0,
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
  work = mkdtempSync(join(tmpdir(), 'ai-sdk-e2e-'));
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await stack?.stop();
});

type Line = Record<string, unknown>;

/** What a person does with the refund's approval while the agent runs: approve it, reject it, or nothing. */
type Approver = 'approved' | 'rejected' | 'none';

/**
 * Starts the example agent with `key`; `killAt` SIGKILLs it at the first line that matches.
 * `approver` decides every approval the run opens, over the HTTP API, while the agent runs
 * (default `approved`). Resolves with its lines and the approvals decided.
 */
async function runAgent(
  key: string,
  files: { ledger: string; modelLog: string },
  killAt?: (line: Line) => boolean,
  slowTool?: string,
  approver: Approver = 'approved',
): Promise<{ lines: Line[]; killed: boolean; code: number | null; decided: string[] }> {
  const child = spawn(process.execPath, [AGENT, key], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      AGENT_RUNS_URL: stack.url,
      AGENT_RUNS_TOKEN: stack.token,
      REFUND_LEDGER: files.ledger,
      MODEL_LOG: files.modelLog,
      SLOW_TOOL: slowTool ?? '',
      AGENT_RUNS_LEASE_MS: '2000',
    },
  });
  children.push(child);
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const lines: Line[] = [];
  let killed = false;
  let running = true;
  const decided: string[] = [];
  let approving: Promise<void> = Promise.resolve();
  for await (const text of createInterface({ input: child.stdout as NodeJS.ReadableStream })) {
    const line = JSON.parse(text) as Line;
    lines.push(line);
    if (lines.length === 1 && approver !== 'none' && typeof line.run_id === 'string')
      approving = decideApprovals(line.run_id, approver, decided, () => running);
    if (killAt?.(line) && !killed) {
      child.kill('SIGKILL');
      killed = true;
    }
  }
  const code = await exited;
  running = false;
  await approving;
  return { lines, killed, code, decided };
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Decides each approval `runId` opens with `decision`, as a person would over the API, while `going()`. */
async function decideApprovals(
  runId: string,
  decision: 'approved' | 'rejected',
  decided: string[],
  going: () => boolean,
): Promise<void> {
  while (going()) {
    for (const request of (await client.getRun(runId)).open_requests) {
      if (request.kind !== 'approval' || decided.includes(request.request_id)) continue;
      const reason = decision === 'rejected' ? 'order 42 was already refunded by hand' : undefined;
      await client.approve(runId, request.request_id, request.subject.digest, {
        decision,
        ...(reason !== undefined ? { reason } : {}),
      });
      decided.push(request.request_id);
    }
    await sleep(100);
  }
}

/** Resolves once `runId` holds an open approval; returns it. */
async function openApproval(runId: string) {
  for (;;) {
    const open = (await client.getRun(runId)).open_requests.find((r) => r.kind === 'approval');
    if (open !== undefined) return open;
    await sleep(100);
  }
}

const ranTool = (tool: string) => (line: Line) => line.step === 'tool' && line.tool === tool;

const jsonLines = (file: string): Line[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Line)
    : [];

async function allEvents(runId: string): Promise<RunEvent[]> {
  return (await client.events(runId, { after: 0, limit: 1000 })).events;
}

describe('a durable AI SDK agent over HTTP', () => {
  it('resumes the same run after SIGKILL mid-refund: no second refund, no replayed model call sent, completes', async () => {
    const key = `refund-${randomUUID()}`;
    const files = { ledger: join(work, `${key}.ledger`), modelLog: join(work, `${key}.model`) };

    const first = await runAgent(key, files, ranTool('issue_refund'), 'issue_refund');
    expect(first.killed).toBe(true);
    const runId = first.lines[0]?.run_id;
    expect(typeof runId).toBe('string');
    expect(jsonLines(files.ledger)).toHaveLength(1);
    expect(jsonLines(files.modelLog).map((l) => l.model_call)).toEqual([1, 2]);

    const second = await runAgent(key, files);
    expect(second.code).toBe(0);
    const last = second.lines.at(-1);
    expect(second.lines[0]?.run_id).toBe(runId);
    // Both tool calls come from the record: the lookup's result, the refund's outcome_unknown.
    expect(last).toMatchObject({
      run_id: runId,
      status: 'completed',
      replayed: { model_turns: 2, tool_calls: 2 },
    });
    expect(String(last?.text)).toContain('may or may not have gone through');
    // The refund ran once (before the kill), and no recorded model turn reached the model again.
    expect(second.lines.filter((l) => l.step === 'tool')).toEqual([]);
    expect(jsonLines(files.ledger)).toHaveLength(1);
    expect(jsonLines(files.modelLog).map((l) => l.model_call)).toEqual([1, 2, 3]);

    const events = await allEvents(runId as string);
    const abandoned = events.filter((e) => e.kind === 'operation_failed');
    expect(abandoned).toHaveLength(1);
    expect(abandoned[0]?.data).toMatchObject({ outcome_unknown: true });
    expect(events.filter((e) => e.kind === 'model_turn_completed')).toHaveLength(3);
    expect(events.filter((e) => e.kind === 'tool_result').map((e) => e.data.tool)).toEqual(['lookup_order']);
    expect(events.at(-1)?.kind).toBe('run_completed');
  }, 60_000);

  it('runs a replay-safe tool again when the process died while it ran', async () => {
    const key = `lookup-${randomUUID()}`;
    const files = { ledger: join(work, `${key}.ledger`), modelLog: join(work, `${key}.model`) };

    const first = await runAgent(key, files, ranTool('lookup_order'), 'lookup_order');
    expect(first.killed).toBe(true);
    const runId = first.lines[0]?.run_id as string;
    expect(jsonLines(files.modelLog)).toHaveLength(1);

    const second = await runAgent(key, files);
    expect(second.lines.filter((l) => l.step === 'tool').map((l) => l.tool)).toEqual([
      'lookup_order',
      'issue_refund',
    ]);
    expect(second.lines.at(-1)).toMatchObject({
      run_id: runId,
      status: 'completed',
      text: 'Order 42 was refunded 30.00 EUR.',
      replayed: { model_turns: 1, tool_calls: 0 },
    });
    expect(jsonLines(files.ledger)).toHaveLength(1);
    expect(jsonLines(files.modelLog).map((l) => l.model_call)).toEqual([1, 2, 3]);
    const events = await allEvents(runId);
    // The lookup was kept for the next client and begun again under the same op_id.
    const lookupStarts = events.filter(
      (e) => e.kind === 'operation_started' && e.data.tool === 'lookup_order',
    );
    expect(lookupStarts.map((e) => [e.operation_id, e.data.attempt])).toEqual([
      [`${runId}/op/2`, 1],
      [`${runId}/op/2`, 2],
    ]);
    expect(events.some((e) => e.kind === 'operation_failed')).toBe(false);
  }, 60_000);

  it('a third start of a completed run replays it all and calls neither the model nor a tool', async () => {
    const key = `refund-${randomUUID()}`;
    const files = { ledger: join(work, `${key}.ledger`), modelLog: join(work, `${key}.model`) };
    const first = await runAgent(key, files);
    expect(first.lines.at(-1)).toMatchObject({
      status: 'completed',
      text: 'Order 42 was refunded 30.00 EUR.',
    });
    const again = await runAgent(key, files);
    expect(again.lines.at(-1)).toMatchObject({
      run_id: first.lines[0]?.run_id,
      status: 'completed',
      text: 'Order 42 was refunded 30.00 EUR.',
      replayed: { model_turns: 3, tool_calls: 2 },
    });
    expect(jsonLines(files.ledger)).toHaveLength(1);
    expect(jsonLines(files.modelLog)).toHaveLength(3);
  }, 60_000);

  it('the refund waits for its approval; killed while waiting, the restart waits for the same request; approved, it runs once', async () => {
    const key = `approve-${randomUUID()}`;
    const files = { ledger: join(work, `${key}.ledger`), modelLog: join(work, `${key}.model`) };
    let runId = '';
    const waiting = runAgent(
      key,
      files,
      (line) => {
        if (typeof line.run_id === 'string') runId = line.run_id;
        return false;
      },
      undefined,
      'none',
    );
    // Kill it once the refund's approval is open (the agent holds the lease and waits).
    const child = children.at(-1) as ChildProcess;
    while (runId === '') await sleep(50);
    const request = await openApproval(runId);
    expect(request).toMatchObject({
      kind: 'approval',
      subject: {
        kind: 'tool_call',
        digest_alg: 'sha256:rfc8785',
        changes: {
          tool: 'issue_refund',
          args: { order_id: '42', amount_cents: 3000 },
          call_id: 'call_issue_refund',
        },
      },
    });
    child.kill('SIGKILL');
    expect((await waiting).code).toBe(null);
    expect(jsonLines(files.ledger)).toEqual([]);

    const second = await runAgent(key, files);
    expect(second.decided).toEqual([request.request_id]);
    expect(second.lines.at(-1)).toMatchObject({
      run_id: runId,
      status: 'completed',
      text: 'Order 42 was refunded 30.00 EUR.',
    });
    expect(second.lines.filter((l) => l.step === 'tool').map((l) => l.tool)).toEqual(['issue_refund']);
    expect(jsonLines(files.ledger)).toHaveLength(1);
    const events = await allEvents(runId);
    expect(events.filter((e) => e.kind === 'request_opened').map((e) => e.data.request_id)).toEqual([
      request.request_id,
    ]);
    expect(events.find((e) => e.kind === 'request_resolved')?.data).toMatchObject({ decision: 'approved' });
    const refundStart = events.find((e) => e.kind === 'operation_started' && e.data.tool === 'issue_refund');
    expect(refundStart?.data.call_id).toBe('call_issue_refund');
    expect(refundStart?.seq).toBeGreaterThan(events.find((e) => e.kind === 'request_resolved')?.seq ?? 0);
  }, 60_000);

  it('a rejected refund is not run; the model sees the denial, and a restart replays it without asking again', async () => {
    const key = `reject-${randomUUID()}`;
    const files = { ledger: join(work, `${key}.ledger`), modelLog: join(work, `${key}.model`) };
    const first = await runAgent(key, files, undefined, undefined, 'rejected');
    expect(first.decided).toHaveLength(1);
    expect(first.lines.at(-1)).toMatchObject({
      status: 'completed',
      text: 'The refund for order 42 was not approved; nothing was refunded.',
    });
    expect(first.lines.filter((l) => l.step === 'tool').map((l) => l.tool)).toEqual(['lookup_order']);
    expect(jsonLines(files.ledger)).toEqual([]);
    const runId = first.lines[0]?.run_id as string;
    const events = await allEvents(runId);
    expect(events.find((e) => e.kind === 'request_resolved')?.data).toMatchObject({
      decision: 'rejected',
      reason: 'order 42 was already refunded by hand',
    });
    expect(events.some((e) => e.kind === 'operation_started' && e.data.tool === 'issue_refund')).toBe(false);

    const again = await runAgent(key, files, undefined, undefined, 'none');
    expect(again.lines.at(-1)).toMatchObject({
      run_id: runId,
      text: 'The refund for order 42 was not approved; nothing was refunded.',
      replayed: { model_turns: 3, tool_calls: 1 },
    });
    expect((await allEvents(runId)).filter((e) => e.kind === 'request_opened')).toHaveLength(1);
  }, 60_000);

  it('a stop while a tool waits for its approval ends the wait: run_stopped, the tool never runs', async () => {
    const key = `stop-wait-${randomUUID()}`;
    const durable = durableAgent({
      client,
      key,
      run: { subject: { workspace: 'e2e', path: `/ai-sdk/${key}` }, input: 'note it' },
      ttlMs: 3_000,
    });
    const model = new MockLanguageModelV4({ doGenerate: callTool('note', { text: 'needs a person' }) });
    let notes = 0;
    let runId = '';
    const outcome = durable
      .run(({ runId: id }) => {
        runId = id;
        return generateText({
          model: wrapLanguageModel({ model, middleware: durable.middleware }),
          tools: durable.tools({ note: noteTool(() => (notes += 1)) }, { needsApproval: ['note'] }),
          prompt: 'note it',
          stopWhen: stepCountIs(3),
        });
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    while (runId === '') await sleep(20);
    const request = await openApproval(runId);
    expect(request).toMatchObject({ subject: { changes: { tool: 'note', call_id: 'call_1' } } });
    expect((await client.stop(runId, { reason: 'not today' })).ack).toBe('applied');
    expect(await outcome).toMatchObject({ code: 'run_stopped' });
    expect(notes).toBe(0);
    expect((await client.getRun(runId)).status).toBe('stopped');
    expect(
      (await allEvents(runId)).some((e) => e.kind === 'operation_started' && e.data.kind === 'tool_call'),
    ).toBe(false);
  }, 30_000);

  it('streamText works the same: the recorded turns are streamed, and a second start replays them', async () => {
    const key = `stream-${randomUUID()}`;
    const answer = callTool('note', { text: 'streamed' });
    const model = new MockLanguageModelV4({
      doGenerate: async (options) =>
        options.prompt.some((m) => m.role === 'tool')
          ? {
              content: [{ type: 'text', text: 'streamed and noted' }],
              finishReason: { unified: 'stop', raw: 'stop' },
              usage: USAGE,
              warnings: [],
            }
          : answer(),
    });
    let notes = 0;
    const starts = [];
    for (let start = 0; start < 2; start += 1) {
      const durable = durableAgent({
        client,
        key,
        run: { subject: { workspace: 'e2e', path: `/ai-sdk/${key}` }, input: 'stream it' },
        ttlMs: 3_000,
      });
      starts.push(
        await durable.run(async () => {
          const result = streamText({
            model: wrapLanguageModel({ model, middleware: durable.middleware }),
            tools: durable.tools({ note: noteTool(() => (notes += 1)) }),
            prompt: 'stream it',
            stopWhen: stepCountIs(4),
          });
          let text = '';
          for await (const delta of result.textStream) text += delta;
          return { text };
        }),
      );
    }
    expect(starts.map((s) => [s.value.text, s.run.status, s.replayed])).toEqual([
      ['streamed and noted', 'completed', { model_turns: 0, tool_calls: 0 }],
      ['streamed and noted', 'completed', { model_turns: 2, tool_calls: 1 }],
    ]);
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(notes).toBe(1);
  }, 30_000);

  it('a budget reached at the next model call stops the loop with budget_exceeded; the run is paused', async () => {
    const key = `budget-${randomUUID()}`;
    const durable = durableAgent({
      client,
      key,
      run: {
        subject: { workspace: 'e2e', path: `/ai-sdk/${key}` },
        input: 'loop',
        budgets: { max_model_calls: 1 },
      },
      ttlMs: 3_000,
    });
    const model = new MockLanguageModelV4({ doGenerate: callTool('note', { text: 'again' }) });
    const failure = await durable
      .run(() =>
        generateText({
          model: wrapLanguageModel({ model, middleware: durable.middleware }),
          tools: durable.tools({ note: noteTool(() => undefined) }, { replaySafe: ['note'] }),
          prompt: 'loop',
          stopWhen: stepCountIs(5),
        }),
      )
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(DurableAgentError);
    expect(failure).toMatchObject({ code: 'budget_exceeded', details: { status: 'paused' } });
    expect(model.doGenerateCalls).toHaveLength(1);
    const runId = (failure as DurableAgentError).runId as string;
    expect((await client.getRun(runId)).status).toBe('paused');
    expect((await allEvents(runId)).map((e) => e.kind)).toContain('budget_exceeded');
  }, 30_000);

  it("a steer sent during a tool call reaches the agent's next model call as a user message", async () => {
    const key = `steer-${randomUUID()}`;
    const durable = durableAgent({
      client,
      key,
      run: { subject: { workspace: 'e2e', path: `/ai-sdk/${key}` }, input: 'note it' },
      ttlMs: 3_000,
    });
    let runId = '';
    const answer = callTool('note', { text: 'first' });
    const model = new MockLanguageModelV4({
      doGenerate: async (options) =>
        options.prompt.some((m) => m.role === 'tool')
          ? {
              content: [{ type: 'text', text: 'noted' }],
              finishReason: { unified: 'stop', raw: 'stop' },
              usage: USAGE,
              warnings: [],
            }
          : answer(),
    });
    const note = noteTool(async () => {
      expect((await client.steer(runId, 'also mention the weather')).ack).toBe('applied');
    });
    const result = await durable.run(({ runId: id }) => {
      runId = id;
      return generateText({
        model: wrapLanguageModel({ model, middleware: durable.middleware }),
        tools: durable.tools({ note }),
        prompt: 'note it',
        stopWhen: stepCountIs(4),
      });
    });
    expect(result.run.status).toBe('completed');
    const second = model.doGenerateCalls[1]?.prompt ?? [];
    expect(second.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'also mention the weather' }],
    });
    expect(second.at(-2)?.role).toBe('tool');
    const kinds = (await allEvents(runId)).map((e) => e.kind);
    expect(kinds.indexOf('steer_consumed')).toBeGreaterThan(kinds.indexOf('tool_result'));
    expect(kinds.lastIndexOf('operation_started')).toBeGreaterThan(kinds.indexOf('steer_consumed'));
  }, 30_000);
});

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A scripted model turn that calls `toolName` with `input` (a fresh call id each time). */
function callTool(toolName: string, input: unknown) {
  let n = 0;
  return async () => {
    n += 1;
    return {
      content: [
        { type: 'tool-call' as const, toolCallId: `call_${n}`, toolName, input: JSON.stringify(input) },
      ],
      finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
      usage: USAGE,
      warnings: [],
    };
  };
}

/** A tool `note` that runs `effect` and answers `{noted: true}`. */
function noteTool(effect: () => unknown) {
  return tool({
    inputSchema: jsonSchema<{ text: string }>({ type: 'object', properties: { text: { type: 'string' } } }),
    execute: async () => {
      await effect();
      return { noted: true };
    },
  });
}
