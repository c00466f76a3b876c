/**
 * Delegation trees on the memory store (issue 16): tree budgets (a child's limits reserved from
 * what its parent has left, its usage charged back at the hand-back, the unused reservation
 * returned), also with several children spending at once; the mailbox between a parent and its
 * children; the stop cascading down three levels; checked hand-backs. Seed: agent-runs ("child
 * runs with a durable mailbox", "Budgets").
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { type MemoryTestEngine, makeMemoryTestEngine } from '../support/memory-engine.ts';
import { treeChild, treeParent } from '../support/tree-reducers.ts';

const PARENT = '/r/tree-parent';
const CHILD = '/r/tree-child';
/** Every model turn costs 7 tokens. */
const TURN_TOKENS = 7;
const model = scriptedModel(async () => ({
  message: { text: 'ok' },
  tool_calls: [],
  finish_reason: 'stop',
  usage: { input_tokens: 5, output_tokens: TURN_TOKENS - 5 },
}));

async function setup(): Promise<MemoryTestEngine> {
  return makeMemoryTestEngine({
    reducers: inProcessReducers({ [PARENT]: treeParent(), [CHILD]: treeChild() }),
    tools: inProcessTools({}),
    models: model,
  });
}

/** Steps every run a step message names until none is left, `workers` engines at once. */
async function settle(t: MemoryTestEngine, engines: Engine[], rounds = 200): Promise<void> {
  for (let i = 0; i < rounds; i += 1) {
    const ids = [...new Set(await t.drainMessages())];
    if (ids.length === 0) return;
    await Promise.all(ids.map((id, k) => (engines[k % engines.length] as Engine).stepRun(id)));
  }
  throw new Error('runs did not settle');
}

async function record(t: MemoryTestEngine, runId: string): Promise<RunRecord> {
  const r = await t.store.getRun(runId);
  if (r === null) throw new Error(`run ${runId} is missing`);
  return r;
}

async function eventsOf(t: MemoryTestEngine, runId: string): Promise<RunEvent[]> {
  return t.engine.readEvents(runId, alice, 0, 1000);
}

function summaryOf(r: RunRecord): string {
  return r.status === 'completed'
    ? (r.summary ?? '')
    : `${r.status}:${'terminal_reason' in r ? r.terminal_reason : ''}`;
}

function tokens(r: RunRecord): number {
  return r.usage.input_tokens + r.usage.output_tokens;
}

async function startParent(t: MemoryTestEngine, input: unknown, budgets: Record<string, number>) {
  const { run } = await t.engine.createRun(
    {
      subject: uniqueSubject(),
      reducer: { function_path: PARENT },
      input,
      budgets,
      on_exceeded: 'fail',
    },
    alice,
  );
  return run.run_id;
}

describe('tree budgets', () => {
  it('reserves half of what the parent has left for a child, charges its usage back at the hand-back and returns the rest', async () => {
    // Prepare
    const t = await setup();
    const parentId = await startParent(
      t,
      { children: [{ reducer: { function_path: CHILD }, input: { turns: 2 } }] },
      { max_total_tokens: 1000, max_operations: 21 },
    );

    // Act
    await settle(t, [t.engine]);

    // Assert: the child got half of what was left (the delegate operation itself counts as one).
    const parent = await record(t, parentId);
    const [summary] = await t.engine.listChildren(parentId, alice);
    const child = await record(t, summary?.run_id ?? '');
    expect(child.budgets).toMatchObject({ max_total_tokens: 500, max_operations: 10 });
    expect(child.reserved).toEqual({ max_total_tokens: 500, max_operations: 10 });
    expect(summaryOf(parent)).toBe('awaited:succeeded(turns=2)');
    expect(parent.child_terms).toEqual({});
    expect(parent.tree_usage).toEqual({
      max_turns: 2,
      max_operations: 2,
      max_model_calls: 2,
      max_total_tokens: 2 * TURN_TOKENS,
    });
  });

  it('refuses a delegation whose budget is over what the parent has left (child_budget_exceeded), creating no child', async () => {
    const t = await setup();
    const parentId = await startParent(
      t,
      {
        children: [
          { reducer: { function_path: CHILD }, wait: false, input: {}, budgets: { max_total_tokens: 80 } },
          { reducer: { function_path: CHILD }, input: {}, budgets: { max_total_tokens: 30 } },
        ],
      },
      { max_total_tokens: 100 },
    );
    await settle(t, [t.engine]);

    const parent = await record(t, parentId);
    expect(summaryOf(parent)).toContain('delegate:failed[child_budget_exceeded:max_total_tokens]');
    expect(await t.engine.listChildren(parentId, alice)).toHaveLength(1);
    const result = (await eventsOf(t, parentId)).filter((e) => e.kind === 'tool_result')[1];
    const envelope = result?.data.envelope as { diagnostics: { message: string }[] };
    expect(envelope.diagnostics[0]?.message).toBe(
      'the child would hold 30 of max_total_tokens; the parent has 20 left',
    );
  });

  it('ends a child whose next operation would go past its reservation child_budget_exceeded, and charges what it spent', async () => {
    const t = await setup();
    const parentId = await startParent(
      t,
      {
        children: [
          { reducer: { function_path: CHILD }, input: { turns: 50 }, budgets: { max_total_tokens: 30 } },
        ],
      },
      { max_total_tokens: 100 },
    );
    await settle(t, [t.engine]);

    const [summary] = await t.engine.listChildren(parentId, alice);
    const child = await record(t, summary?.run_id ?? '');
    expect(summaryOf(child)).toBe('failed:child_budget_exceeded:max_total_tokens');
    // It began turns while under 30 (0, 7, 14, 21, 28): the last one took it past by less than one turn.
    expect(tokens(child)).toBe(35);
    const parent = await record(t, parentId);
    expect(parent.tree_usage.max_total_tokens).toBe(35);
    expect(summaryOf(parent)).toBe('awaited:failed[child_failed]');
  });

  it('keeps a tree of children spending at once within the root’s limit plus one operation', async () => {
    // Prepare: four background children, each asking for far more turns than the tree allows.
    const t = await setup();
    const spender = {
      reducer: { function_path: CHILD },
      wait: false,
      input: { turns: 1000 },
      on_exceeded: 'fail',
    };
    const limit = 400;
    const parentId = await startParent(
      t,
      { children: [spender, spender, spender, spender] },
      {
        max_total_tokens: limit,
      },
    );
    const workers = [t.engine, t.another(), t.another(), t.another()];

    // Act: four workers step the runs concurrently.
    await settle(t, workers);

    // Assert
    const parent = await record(t, parentId);
    const children = await Promise.all(
      (await t.engine.listChildren(parentId, alice)).map((c) => record(t, c.run_id)),
    );
    expect(children).toHaveLength(4);
    expect(children.map((c) => c.reserved?.max_total_tokens)).toEqual([200, 100, 50, 25]);
    for (const c of children) expect(summaryOf(c)).toBe('failed:child_budget_exceeded:max_total_tokens');
    const treeTotal = tokens(parent) + children.reduce((n, c) => n + tokens(c), 0);
    expect(parent.tree_usage.max_total_tokens).toBe(treeTotal);
    expect(treeTotal).toBeGreaterThan(limit - 4 * TURN_TOKENS - 25);
    expect(treeTotal).toBeLessThanOrEqual(limit + TURN_TOKENS);
    expect(parent.status).toBe('completed');
  });
});
