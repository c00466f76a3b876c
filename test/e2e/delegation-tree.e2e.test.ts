/**
 * A delegation tree over HTTP against the local stack, as a user of `npm start` would drive it:
 * a sandboxed (QuickJS) reducer registered with `PUT /functions` runs as a parent that starts two
 * background children at once under a tree budget, steers one of them through the mailbox, and
 * takes a checked hand-back from the other, whose `returns` require a result with artifacts and
 * the evidence `tests_passed` reported ok by a tool. The parent completes `succeeded` only when a
 * hand-back carried that evidence (verified by the child's tool, passed on by the check); the
 * same tree whose second child never runs the tool completes `partial`.
 * docs/contracts/run-lifecycle.md ("child runs with a durable mailbox", "Budgets").
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import { DEFAULT_MODEL_TURN_FUNCTION, type RunRecord } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { untilRun } from '../support/http-runs.ts';

const TURN_TOKENS = 7;
let stack: LocalStack;
let client: AgentRunsClient;
const REDUCER = `/agents/${randomUUID()}/tree`;

async function artifact(): Promise<Uint8Array> {
  const entry = fileURLToPath(new URL('../fixtures/reducers/tree-entry.ts', import.meta.url));
  const out = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    write: false,
  });
  const file = out.outputFiles[0];
  if (file === undefined) throw new Error('esbuild wrote nothing');
  return file.contents;
}

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    heartbeatMs: 300,
    sweepIntervalMs: 1_000,
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: {
      [DEFAULT_MODEL_TURN_FUNCTION]: async () => ({
        message: { text: 'ok' },
        tool_calls: [],
        finish_reason: 'stop',
        usage: { input_tokens: 5, output_tokens: TURN_TOKENS - 5 },
      }),
    },
    registerTools(registry) {
      registry.register({
        name: 'run_tests',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true },
        handler: {
          kind: 'module',
          fn: async () => ({
            envelope: 'raisin.tool-result/1',
            status: 'succeeded',
            payload: { passed: 12 },
            evidence: [{ kind: 'tests_passed', ok: true }],
          }),
        },
      });
    },
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
  await client.putFunction(REDUCER, await artifact(), 'js');
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const ended = (r: RunRecord) => r.status === 'completed' || r.status === 'failed' || r.status === 'stopped';
const tokens = (r: RunRecord) => r.usage.input_tokens + r.usage.output_tokens;

/** The parent's input: a child to steer, and a child whose hand-back is checked. */
function treeInput(runsTests: boolean) {
  const steered = { wait: false, input: { turns: 1, await_message: true } };
  const checked = {
    wait: false,
    input: {
      turns: 2,
      artifacts: [{ kind: 'report', role: 'primary' }],
      ...(runsTests ? { call: 'run_tests' } : {}),
    },
    returns: {
      schema: { type: 'object', required: ['artifacts'], properties: { artifacts: { minItems: 1 } } },
      evidence: ['tests_passed'],
    },
  };
  return {
    children: [steered, checked],
    messages: [{ to: 0, text: 'focus on refunds' }],
    require_evidence: ['tests_passed'],
  };
}

async function runTree(runsTests: boolean) {
  const { run } = await client.createRun({
    subject: { workspace: 'e2e', path: `/tree/${randomUUID()}` },
    reducer: { function_path: REDUCER },
    input: treeInput(runsTests),
    budgets: { max_total_tokens: 200 },
  });
  const parent = await untilRun(client, run.run_id, ended, 30_000);
  const children = await Promise.all(
    (await client.children(run.run_id)).map((c) => untilRun(client, c.run_id, ended, 30_000)),
  );
  return { parent, children };
}

describe('a delegation tree over the local stack', () => {
  it('delegates two children at once under a tree budget, steers one, takes a checked hand-back from the other, and completes verified', async () => {
    // Act
    const { parent, children } = await runTree(true);

    // Assert: both children ran under their reservations of the parent's 200 tokens.
    expect(parent).toMatchObject({ status: 'completed', outcome: 'succeeded' });
    const summary = parent.status === 'completed' ? (parent.summary ?? '') : '';
    expect(summary.split(' | ').sort()).toEqual([
      'background:succeeded(turns=1 heard=focus on refunds)',
      'background:succeeded(turns=2)',
      'sent:succeeded',
    ]);
    expect(children.map((c) => c.reserved?.max_total_tokens).sort()).toEqual([100, 50].sort());
    expect(children.every((c) => c.status === 'completed')).toBe(true);
    // At once: both children existed before either ended.
    const finished = children.map((c) => ('finished_at' in c ? c.finished_at : 0));
    expect(Math.max(...children.map((c) => c.created_at))).toBeLessThan(Math.min(...finished));
    expect(parent.tree_usage.max_total_tokens).toBe(children.reduce((n, c) => n + tokens(c), 0));
    expect(parent.tree_usage.max_total_tokens).toBe(3 * TURN_TOKENS);
    expect(parent.child_terms).toEqual({});
    const events = (await client.events(parent.run_id, { limit: 1000 })).events;
    const handBacks = events
      .filter((e) => e.kind === 'steer_consumed')
      .map((e) => (e.data.input as { hand_back?: { status: string; evidence: unknown[] } }).hand_back)
      .filter((h) => h !== undefined);
    expect(handBacks.map((h) => h?.evidence)).toContainEqual([{ kind: 'tests_passed', ok: true }]);
  });

  it('completes partial, naming the unverified evidence, when the checked child never ran the tool', async () => {
    const { parent } = await runTree(false);

    expect(parent).toMatchObject({ status: 'completed', outcome: 'partial' });
    const summary = parent.status === 'completed' ? (parent.summary ?? '') : '';
    expect(summary).toContain('background:blocked(turns=2)[handback_evidence_missing]');
    expect(summary).toContain('unverified:tests_passed');
  });
});
