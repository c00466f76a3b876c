/**
 * Delegation trees on the memory store: tree budgets (a child's limits reserved from
 * what its parent has left, its usage charged back at the hand-back, the unused reservation
 * returned), also with several children spending at once; the mailbox between a parent and its
 * children; the stop cascading down three levels; checked hand-backs.
 * docs/contracts/run-lifecycle.md ("child runs with a durable mailbox", "Budgets").
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import * as contracts from '../../lib/contracts/index.ts';
import { LEASE_TTL_MS } from '../../lib/core/run-machine.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import { envelopeOf } from '../../lib/core/tool-result-validation.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import type { ToolHost } from '../../lib/engine/ports.ts';
import { shardOfRun } from '../support/faults.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { type MemoryTestEngine, makeMemoryTestEngine } from '../support/memory-engine.ts';
import { DELEGATE_MESSAGE_TOOL, DELEGATE_TOOL, treeChild, treeParent } from '../support/tree-reducers.ts';

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

/** A tool that reports evidence `tests_passed` with ok: true (a verified check). */
function toolsWithEvidence(): ToolHost {
  const host = inProcessTools({ run_tests: async () => null });
  return {
    ...host,
    async execute(request, signal) {
      if (request.tool !== 'run_tests') return host.execute(request, signal);
      return envelopeOf('succeeded', { passed: 12 }, { evidence: [{ kind: 'tests_passed', ok: true }] });
    },
  };
}

async function setup(): Promise<MemoryTestEngine> {
  return makeMemoryTestEngine({
    reducers: inProcessReducers({ [PARENT]: treeParent(), [CHILD]: treeChild() }),
    tools: toolsWithEvidence(),
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

it('drives the reserved tools the contracts name', () => {
  expect([DELEGATE_TOOL, DELEGATE_MESSAGE_TOOL]).toEqual([
    contracts.DELEGATE_TOOL,
    contracts.DELEGATE_MESSAGE_TOOL,
  ]);
});

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

describe('the mailbox', () => {
  const waiter = { reducer: { function_path: CHILD }, wait: false, input: { await_message: true } };

  it('steers a background child: the child sees the parent’s text as user_input, and its hand-back reaches the parent', async () => {
    const t = await setup();
    const parentId = await startParent(
      t,
      { children: [waiter], messages: [{ to: 0, text: 'refunds first' }] },
      {},
    );

    await settle(t, [t.engine]);

    const parent = await record(t, parentId);
    expect(summaryOf(parent)).toBe('sent:succeeded | background:succeeded(turns=0 heard=refunds first)');
    const [summary] = await t.engine.listChildren(parentId, alice);
    const childEvents = await eventsOf(t, summary?.run_id ?? '');
    const consumed = childEvents.filter((e) => e.kind === 'steer_consumed');
    expect(consumed.map((e) => e.data.input)).toEqual(['refunds first']);
    const sent = (await eventsOf(t, parentId)).find(
      (e) => e.kind === 'tool_result' && e.data.tool === '/lib/raisin/agent-runs/delegate/message',
    );
    expect((sent?.data.envelope as { payload: unknown } | undefined)?.payload).toMatchObject({
      to: summary?.run_id,
      ack: { ack: 'applied' },
    });
  });

  it('answers a delegate message with bad args as failed invalid_input naming the field, and steers nobody', async () => {
    const t = await setup();
    const parentId = await startParent(t, { children: [waiter], messages: [{ to: 0, text: 42 }] }, {});

    await settle(t, [t.engine]);

    const sent = (await eventsOf(t, parentId)).find(
      (e) => e.kind === 'tool_result' && e.data.tool === '/lib/raisin/agent-runs/delegate/message',
    );
    const envelope = sent?.data.envelope as
      | { status: string; error_class: string; diagnostics: { code: string; message: string }[] }
      | undefined;
    expect(envelope?.status).toBe('failed');
    expect(envelope?.error_class).toBe('invalid_input');
    expect(envelope?.diagnostics[0]?.code).toBe('delegate_message_args_invalid');
    expect(envelope?.diagnostics[0]?.message).toMatch(/^args\.text: /);
    const [summary] = await t.engine.listChildren(parentId, alice);
    const childEvents = await eventsOf(t, summary?.run_id ?? '');
    expect(childEvents.filter((e) => e.kind === 'steer_consumed')).toEqual([]);
  });

  it('delivers a message once when the worker dies after sending it and the operation is dispatched again', async () => {
    // Prepare: the parent's worker dies right after its second operation (the message) ran.
    const t = await setup();
    let parentId = '';
    let dispatched = 0;
    const dying = t.another({
      faults: (point, runId) => {
        if (point === 'after_dispatch' && runId === parentId && ++dispatched === 2)
          throw new Error('worker killed');
      },
    });
    parentId = await startParent(t, { children: [waiter], messages: [{ to: 0, text: 'once' }] }, {});
    await expect(settle(t, [dying])).rejects.toThrow('worker killed');

    // Act: the lease expires; the sweeper takes over and the message operation is dispatched again.
    t.clock.advance(LEASE_TTL_MS + defaultClockSkewMs(LEASE_TTL_MS) + 1_000);
    const [summary] = await t.engine.listChildren(parentId, alice);
    const childId = summary?.run_id ?? '';
    await t.engine.sweep([...new Set([...shardOfRun(parentId), ...shardOfRun(childId)])]);
    await settle(t, [t.engine]);

    // Assert
    const parent = await record(t, parentId);
    expect(summaryOf(parent)).toBe('sent:succeeded | background:succeeded(turns=0 heard=once)');
    const childEvents = await eventsOf(t, childId);
    expect(childEvents.filter((e) => e.kind === 'steer_queued')).toHaveLength(1);
    const sent = (await eventsOf(t, parentId)).filter(
      (e) => e.kind === 'tool_result' && e.data.tool === '/lib/raisin/agent-runs/delegate/message',
    );
    expect(
      (sent[0]?.data.envelope as { payload: { ack: { ack: string } } } | undefined)?.payload.ack.ack,
    ).toBe('duplicate');
  });

  it('lets a child post to its parent, which sees user_input {from_child, text} before the child’s hand-back', async () => {
    const t = await setup();
    const parentId = await startParent(
      t,
      { children: [{ reducer: { function_path: CHILD }, input: { post: 'halfway there', turns: 1 } }] },
      {},
    );
    await settle(t, [t.engine]);

    const parent = await record(t, parentId);
    expect(summaryOf(parent)).toBe('message:halfway there | awaited:succeeded(turns=1)');
    const [summary] = await t.engine.listChildren(parentId, alice);
    const consumed = (await eventsOf(t, parentId)).filter((e) => e.kind === 'steer_consumed');
    expect(consumed.map((e) => e.data.input)).toEqual([
      { from_child: summary?.run_id, text: 'halfway there' },
    ]);
  });

  it('refuses a message to a run that is not a child of the sender (not_linked), and to a parent a root does not have', async () => {
    const t = await setup();
    const strangerId = await startParent(t, { children: [waiter] }, {});
    await settle(t, [t.engine]);
    const [strangersChild] = await t.engine.listChildren(strangerId, alice);
    const parentId = await startParent(
      t,
      {
        children: [],
        messages: [
          { to: 0, text: 'hijack', child_run_id: strangersChild?.run_id ?? '' },
          { to: 9, text: 'to nobody' },
        ],
      },
      {},
    );
    await settle(t, [t.engine]);

    expect(summaryOf(await record(t, parentId))).toBe('sent:failed | sent:failed');
    const codes = (await eventsOf(t, parentId))
      .filter((e) => e.kind === 'tool_result')
      .map((e) => (e.data.envelope as { diagnostics: { code: string }[] }).diagnostics[0]?.code);
    expect(codes).toEqual(['not_linked', 'not_linked']);
    const steers = (await eventsOf(t, strangersChild?.run_id ?? '')).filter((e) => e.kind === 'steer_queued');
    expect(steers).toEqual([]);
  });

  it('cascades a stop down three levels: parent, child and grandchild all end stopped with nothing owed', async () => {
    const t = await setup();
    const grandchild = { reducer: { function_path: CHILD }, input: { await_message: true } };
    const parentId = await startParent(
      t,
      { children: [{ reducer: { function_path: PARENT }, input: { children: [grandchild] } }] },
      {},
    );
    await settle(t, [t.engine]);
    const [child] = await t.engine.listChildren(parentId, alice);
    const [grand] = await t.engine.listChildren(child?.run_id ?? '', alice);
    expect((await record(t, grand?.run_id ?? '')).status).toBe('queued');

    const ack = await t.engine.applyControl(parentId, { control_id: 'stop-tree', command: 'stop' }, alice);
    await settle(t, [t.engine]);

    expect(ack.ack).toBe('applied');
    for (const id of [parentId, child?.run_id ?? '', grand?.run_id ?? '']) {
      const r = await record(t, id);
      expect(r.status).toBe('stopped');
      expect('owed' in r && r.owed).toEqual([]);
    }
    const reasons = await Promise.all(
      [child?.run_id ?? '', grand?.run_id ?? ''].map(
        async (id) => (await eventsOf(t, id)).find((e) => e.kind === 'stopped')?.data.reason,
      ),
    );
    expect(reasons).toEqual(['parent_ended', 'parent_ended']);
  });
});

describe('checked hand-backs', () => {
  const returns = {
    schema: { type: 'object', required: ['artifacts'], properties: { summary: { type: 'string' } } },
    evidence: ['tests_passed'],
  };

  it('hands back blocked, naming the schema violation and the missing evidence, a child that completed succeeded without them', async () => {
    const t = await setup();
    const parentId = await startParent(
      t,
      { children: [{ reducer: { function_path: CHILD }, input: {}, returns }] },
      {},
    );
    await settle(t, [t.engine]);

    const parent = await record(t, parentId);
    expect(summaryOf(parent)).toBe('awaited:blocked(turns=0)[handback_schema_mismatch]');
    const handBack = (await eventsOf(t, parentId)).find((e) => e.kind === 'tool_result');
    const envelope = handBack?.data.envelope as {
      diagnostics: { code: string; message: string }[];
      payload: { result: unknown; status: string; outcome: string };
    };
    expect(envelope.diagnostics.map((d) => d.code)).toEqual([
      'handback_schema_mismatch',
      'handback_evidence_missing',
    ]);
    expect(envelope.diagnostics[0]?.message).toMatch(/artifacts/);
    expect(envelope.diagnostics[1]?.message).toMatch(/"tests_passed"/);
    expect(envelope.payload).toMatchObject({
      status: 'completed',
      outcome: 'succeeded',
      result: { summary: 'turns=0' },
    });
  });

  it('hands back succeeded a background child whose tool reported the evidence ok and whose result matches', async () => {
    const t = await setup();
    const child = {
      reducer: { function_path: CHILD },
      wait: false,
      input: { call: 'run_tests', artifacts: [{ kind: 'report', role: 'primary' }] },
      returns,
    };
    const parentId = await startParent(t, { children: [child] }, {});
    await settle(t, [t.engine]);

    const parent = await record(t, parentId);
    expect(summaryOf(parent)).toBe('background:succeeded(turns=0)');
    const steer = (await eventsOf(t, parentId)).find((e) => e.kind === 'steer_consumed');
    const input = steer?.data.input as { hand_back: { payload: { result: unknown }; evidence: unknown[] } };
    expect(input.hand_back.evidence).toEqual([{ kind: 'tests_passed', ok: true }]);
    expect(input.hand_back.payload.result).toEqual({
      outcome: 'succeeded',
      summary: 'turns=0',
      artifacts: [{ kind: 'report', role: 'primary' }],
    });
  });

  it('does not take a child’s own evidence claims: evidence only counts from its tool envelopes', async () => {
    const t = await setup();
    // The child claims the evidence on its complete effect, and calls no tool that reports it.
    const claims = [{ kind: 'tests_passed', ok: true }];
    const child = {
      reducer: { function_path: CHILD },
      input: { claims },
      returns: { evidence: ['tests_passed'] },
    };
    const parentId = await startParent(t, { children: [child] }, {});
    await settle(t, [t.engine]);

    expect(summaryOf(await record(t, parentId))).toBe('awaited:blocked(turns=0)[handback_evidence_missing]');
  });

  it('refuses a delegation whose returns.schema is not a JSON Schema', async () => {
    const t = await setup();
    const child = {
      reducer: { function_path: CHILD },
      input: {},
      returns: { schema: { type: 'no-such-type' } },
    };
    const parentId = await startParent(t, { children: [child] }, {});
    await settle(t, [t.engine]);

    expect(summaryOf(await record(t, parentId))).toBe('delegate:failed[delegate_args_invalid]');
    expect(await t.engine.listChildren(parentId, alice)).toEqual([]);
  });
});
