/**
 * Child runs on the memory store and step queue: delegation through the reserved delegate tool, the
 * hand-back of an ended child (eager, and by the sweeper when the eager one is lost), the
 * delegation budgets, the stop of children when their parent ends, and a worker killed after it
 * created a child. docs/contracts/run-lifecycle.md, "Child runs", "Budgets", "Leases, recovery and
 * the sweeper" (the sweeper delivers owed hand-backs and stops children of ended parents).
 */
import { describe, expect, it } from 'vitest';
import { DELEGATE_TOOL, type RunEvent, type RunRecord } from '../../lib/contracts/index.ts';
import type { AdmissionConfig } from '../../lib/core/admission.ts';
import { quotaWindowOf } from '../../lib/core/admission.ts';
import { LEASE_TTL_MS } from '../../lib/core/run-machine.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { CommitRejected, type RunStore } from '../../lib/engine/ports.ts';
import { scopedStore, shardOfRun, wrapStore } from '../support/faults.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { type MemoryTestEngine, makeMemoryTestEngine } from '../support/memory-engine.ts';
import { delegator } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));
const REDUCER = '/r/delegator';

async function setup(
  options: { replay_safe?: boolean; store?: (s: RunStore) => RunStore; admission?: AdmissionConfig } = {},
) {
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ [REDUCER]: delegator(DELEGATE_TOOL, options) }),
    tools: inProcessTools({}),
    models: noModel,
    ...(options.admission !== undefined ? { admission: options.admission } : {}),
  });
  const scoped = scopedStore(t.store);
  const store = options.store ? options.store(scoped) : scoped;
  return { t, store, scoped, engine: t.another({ store }) };
}

/** Steps every run a step message names until no message is left (the step Lambda's job). */
async function settle(t: MemoryTestEngine, engine: Engine, rounds = 40): Promise<void> {
  for (let i = 0; i < rounds; i += 1) {
    const ids = await t.drainMessages();
    if (ids.length === 0) return;
    for (const id of new Set(ids)) await engine.stepRun(id);
  }
  throw new Error('runs did not settle');
}

async function sweepRuns(engine: Engine, ids: string[]) {
  return engine.sweep([...new Set(ids.flatMap(shardOfRun))]);
}

async function eventsOf(engine: Engine, runId: string): Promise<RunEvent[]> {
  return engine.readEvents(runId, alice, 0, 1000);
}

/** The first diagnostic code of each delegate tool_result of `runId`, in order. */
async function resultCodes(engine: Engine, runId: string): Promise<string[]> {
  return (await eventsOf(engine, runId))
    .filter((e) => e.kind === 'tool_result')
    .map((e) => {
      const env = e.data.envelope as { status: string; diagnostics?: { code: string }[] };
      return env.diagnostics?.[0]?.code ?? env.status;
    });
}

async function record(store: RunStore, runId: string): Promise<RunRecord> {
  const r = await store.getRun(runId);
  if (r === null) throw new Error(`run ${runId} is missing`);
  return r;
}

describe('delegation', () => {
  it('runs each delegated sub-task as a child run and hands its end back to the parent as the call’s tool_result', async () => {
    // Prepare
    const { t, store, engine } = await setup();
    const subject = uniqueSubject();
    const { run } = await engine.createRun(
      {
        subject,
        reducer: { function_path: REDUCER },
        input: { children: [{ input: { leaf: 'complete' } }, { input: { leaf: 'fail' } }] },
        context: { mode: 'task', instructions: 'be brief' },
      },
      alice,
    );

    // Act
    await settle(t, engine);

    // Assert: the parent saw both hand-backs, in order, with the children's ends.
    const parent = await record(store, run.run_id);
    expect(parent.status).toBe('completed');
    expect(parent.status === 'completed' && parent.summary).toBe('succeeded:completed,failed:failed');
    expect(parent.counters.children).toBe(2);
    expect(parent.live_children).toEqual([]);
    const children = await engine.listChildren(run.run_id, alice);
    expect(children.map((c) => c.status).sort()).toEqual(['completed', 'failed']);
    const paths: string[] = [];
    for (const summary of children) {
      const child = await record(store, summary.run_id);
      paths.push(child.subject.path);
      expect(child.parent_run_id).toBe(run.run_id);
      expect(child.depth).toBe(1);
      expect(child.principal).toEqual(parent.principal);
      expect(child.subject.workspace).toBe(subject.workspace);
      expect(child.subject.path).toMatch(new RegExp(`^${subject.path}/children/\\d+$`));
      expect('owed' in child && child.owed).toEqual([]);
      const [started] = await eventsOf(engine, summary.run_id);
      expect(started?.data.context).toEqual({ mode: 'task', instructions: 'be brief' });
    }
    // Numbered as documented: the first child is /children/1, the second /children/2.
    expect(paths.sort()).toEqual([`${subject.path}/children/1`, `${subject.path}/children/2`]);
    const results = (await eventsOf(engine, run.run_id)).filter((e) => e.kind === 'tool_result');
    expect(results).toHaveLength(2);
    const failed = results[1]?.data.envelope as { status: string; diagnostics: { code: string }[] };
    expect(failed.status).toBe('failed');
    expect(failed.diagnostics[0]?.code).toBe('child_failed');
  });

  it('keeps the runtime’s delegation keys apart from client create keys: a client cannot take a child’s place', async () => {
    // Prepare: the parent exists; alice claims every delegation key its first operations would use.
    const { t, store, engine } = await setup();
    const { run } = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        input: { children: [{ input: { leaf: 'complete' } }] },
      },
      alice,
    );
    const claimed = new Set<string>();
    for (let n = 0; n <= 6; n += 1) {
      const taken = await engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: null,
          input: 'squatter',
          create_key: `delegate:${run.run_id}/op/${n}`,
        },
        alice,
      );
      claimed.add(taken.run.run_id);
    }

    // Act
    await settle(t, engine);

    // Assert: the child is a run of the delegation, not one of alice's, and its end reached the parent.
    const children = await engine.listChildren(run.run_id, alice);
    expect(children).toHaveLength(1);
    expect(claimed.has(children[0]?.run_id ?? '')).toBe(false);
    expect((await record(store, children[0]?.run_id ?? '')).parent_run_id).toBe(run.run_id);
    expect((await record(store, run.run_id)).status).toBe('completed');
  });

  it('answers a delegate call with bad args as failed invalid_input naming the field, and starts no child', async () => {
    const { t, store, engine } = await setup();
    const { run } = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        input: { children: [{ budgets: { max_turns: -1 } }] },
      },
      alice,
    );
    await settle(t, engine);

    const parent = await record(store, run.run_id);
    expect(parent.status).toBe('completed');
    const result = (await eventsOf(engine, run.run_id)).find((e) => e.kind === 'tool_result');
    const envelope = result?.data.envelope as {
      status: string;
      error_class: string;
      diagnostics: { code: string; message: string }[];
    };
    expect(envelope.status).toBe('failed');
    expect(envelope.error_class).toBe('invalid_input');
    expect(envelope.diagnostics[0]?.code).toBe('delegate_args_invalid');
    expect(envelope.diagnostics[0]?.message).toMatch(/^args\.budgets\.max_turns/);
    expect(await engine.listChildren(run.run_id, alice)).toEqual([]);
  });

  it('refuses delegate args with an unknown key or a subject in another workspace', async () => {
    const { t, store, engine } = await setup();
    const { run } = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        input: {
          children: [
            { input: { leaf: 'complete' }, objectiv: 'typo' },
            { input: { leaf: 'complete' }, subject: { workspace: 'elsewhere', path: '/x' } },
            { input: { leaf: 'complete' }, subject: { workspace: 'user:alice', path: '/a\u202eb' } },
          ],
        },
      },
      alice,
    );
    await settle(t, engine);

    const messages = (await eventsOf(engine, run.run_id))
      .filter((e) => e.kind === 'tool_result')
      .map((e) => (e.data.envelope as { diagnostics: { code: string; message: string }[] }).diagnostics[0]);
    expect(messages.map((d) => d?.code)).toEqual([
      'delegate_args_invalid',
      'delegate_args_invalid',
      'delegate_args_invalid',
    ]);
    expect(messages[0]?.message).toMatch(/objectiv/);
    expect(messages[1]?.message).toMatch(/^args\.subject\.workspace/);
    expect(await engine.listChildren(run.run_id, alice)).toEqual([]);
    // A refused delegation started no child: it does not use up max_children.
    expect((await record(store, run.run_id)).counters.children).toBe(0);
  });

  it('refuses a delegation whose default child path would pass 1 024 characters, counting no child', async () => {
    const { t, store, engine } = await setup();
    const { run } = await engine.createRun(
      {
        subject: { workspace: 'user:alice', path: `/${'p'.repeat(1_020)}` },
        reducer: { function_path: REDUCER },
        input: { children: [{ input: { leaf: 'complete' } }] },
      },
      alice,
    );
    await settle(t, engine);

    const result = (await eventsOf(engine, run.run_id)).find((e) => e.kind === 'tool_result');
    const envelope = result?.data.envelope as {
      status: string;
      diagnostics: { code: string; message: string }[];
    };
    expect(envelope.status).toBe('failed');
    expect(envelope.diagnostics[0]?.code).toBe('delegate_subject_too_long');
    expect(envelope.diagnostics[0]?.message).toMatch(/1032 characters/);
    expect(await engine.listChildren(run.run_id, alice)).toEqual([]);
    expect((await record(store, run.run_id)).counters.children).toBe(0);
  });

  it('refuses a delegation past max_children (on_exceeded fail) before it starts a child', async () => {
    const { t, store, engine } = await setup();
    const { run } = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        input: { children: [{ input: { leaf: 'complete' } }, { input: { leaf: 'complete' } }] },
        budgets: { max_children: 1 },
        on_exceeded: 'fail',
      },
      alice,
    );
    await settle(t, engine);

    const parent = await record(store, run.run_id);
    expect(parent.status).toBe('failed');
    expect('terminal_reason' in parent && parent.terminal_reason).toBe('budget_exceeded:max_children');
    expect(await engine.listChildren(run.run_id, alice)).toHaveLength(1);
  });

  it('inherits max_depth as a ceiling: a child at the limit cannot delegate further, and its parent hears of it', async () => {
    const { t, store, engine } = await setup();
    const { run } = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        // The child would delegate to a grandchild (depth 2), past max_depth 1.
        input: {
          children: [{ input: { children: [{ input: { leaf: 'complete' } }] }, on_exceeded: 'fail' }],
        },
        budgets: { max_depth: 1 },
      },
      alice,
    );
    await settle(t, engine);

    const [summary] = await engine.listChildren(run.run_id, alice);
    const child = await record(store, summary?.run_id ?? '');
    expect(child.budgets.max_depth).toBe(1);
    expect(child.status).toBe('failed');
    expect('terminal_reason' in child && child.terminal_reason).toBe('budget_exceeded:max_depth');
    expect(await engine.listChildren(child.run_id, alice)).toEqual([]);
    const parent = await record(store, run.run_id);
    expect(parent.status === 'completed' && parent.summary).toBe('failed:failed');
  });

  it('stops the live children of a parent that is stopped, and settles both runs’ owed duties', async () => {
    // Prepare: the child asks a question, so it rests waiting while its parent waits for it.
    const { t, store, engine } = await setup();
    const { run } = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        input: { children: [{ input: { leaf: 'ask' } }] },
      },
      alice,
    );
    await settle(t, engine);
    const [summary] = await engine.listChildren(run.run_id, alice);
    const childId = summary?.run_id ?? '';
    expect((await record(store, childId)).status).toBe('waiting');
    expect((await record(store, run.run_id)).live_children).toEqual([childId]);
    // Nobody but the child itself answers the parent's wait.
    await expect(
      engine.deliverResult(
        `child:${childId}`,
        { envelope: 'raisin.tool-result/1', status: 'succeeded' },
        alice,
      ),
    ).rejects.toMatchObject({ code: 'unauthorized' });

    // Act
    const ack = await engine.applyControl(run.run_id, { control_id: 'stop-1', command: 'stop' }, alice);
    await settle(t, engine);

    // Assert
    expect(ack.ack).toBe('applied');
    const parent = await record(store, run.run_id);
    const child = await record(store, childId);
    expect(parent.status).toBe('stopped');
    expect(child.status).toBe('stopped');
    expect('owed' in parent && parent.owed).toEqual([]);
    expect('owed' in child && child.owed).toEqual([]);
    const stopped = (await eventsOf(engine, childId)).find((e) => e.kind === 'stopped');
    expect(stopped?.data.reason).toBe('parent_ended');
  });

  it('stops a child whose wait the parent withdrew (a steer), and a conversation-mode context makes a task child', async () => {
    const { t, store, engine } = await setup();
    const { run } = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        input: { children: [{ input: { leaf: 'ask' } }] },
        context: { mode: 'conversation', instructions: 'hi' },
      },
      alice,
    );
    await settle(t, engine);
    const [summary] = await engine.listChildren(run.run_id, alice);
    const childId = summary?.run_id ?? '';
    expect((await record(store, childId)).status).toBe('waiting');
    const [started] = await eventsOf(engine, childId);
    expect(started?.data.context).toEqual({ mode: 'task', instructions: 'hi' });

    await engine.applyControl(
      run.run_id,
      { control_id: 'away', command: 'steer', input: 'never mind' },
      alice,
    );
    await settle(t, engine);

    const parent = await record(store, run.run_id);
    expect(parent.status === 'completed' && parent.summary).toBe('steered away');
    const child = await record(store, childId);
    expect(child.status).toBe('stopped');
    expect((await eventsOf(engine, childId)).find((e) => e.kind === 'stopped')?.data.reason).toBe(
      'parent_withdrew',
    );
  });

  it('delivers a hand-back lost at the child’s end from the sweeper, once, with two sweepers at once', async () => {
    // Prepare: the first hand-back commit into any parent fails (a lost write).
    let dropped = 0;
    const { t, store, engine } = await setup({
      store: (s) =>
        wrapStore(s, {
          async commit(c) {
            if (dropped === 0 && c.events.some((e) => e.kind === 'result_delivered')) {
              dropped += 1;
              throw new Error('injected: hand-back commit lost');
            }
            return s.commit(c);
          },
        }),
    });
    const { run } = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        input: { children: [{ input: { leaf: 'complete' } }] },
      },
      alice,
    );
    await settle(t, engine);
    const [summary] = await engine.listChildren(run.run_id, alice);
    const childId = summary?.run_id ?? '';
    const owing = await record(store, childId);
    expect(dropped).toBe(1);
    expect('owed' in owing && owing.owed).toEqual(['handback']);
    expect((await record(store, run.run_id)).status).toBe('waiting');

    // Act: two sweepers at once, then a third sweep (which finds nothing owed), then the parent's step.
    const other = t.another({ store });
    const [first, second] = await Promise.all([
      sweepRuns(engine, [childId, run.run_id]),
      sweepRuns(other, [childId, run.run_id]),
    ]);
    const third = await sweepRuns(engine, [childId, run.run_id]);
    await settle(t, engine);

    // Assert
    expect(first.handed_back + second.handed_back).toBe(1);
    expect(third.handed_back).toBe(0);
    const parent = await record(store, run.run_id);
    expect(parent.status === 'completed' && parent.summary).toBe('succeeded:completed');
    const delivered = (await eventsOf(engine, run.run_id)).filter((e) => e.kind === 'tool_result');
    expect(delivered).toHaveLength(1);
    const child = await record(store, childId);
    expect('owed' in child && child.owed).toEqual([]);
  });

  it('adopts the child a killed worker created: one child, its end handed back once, even when it ended first', async () => {
    // Prepare: the parent's worker dies right after the delegate call created the child.
    const { t, store, scoped } = await setup();
    let killed = false;
    const dying = t.another({
      store: scoped,
      faults: (point) => {
        if (point === 'after_dispatch' && !killed) {
          killed = true;
          throw new Error('worker killed');
        }
      },
    });
    const engine = t.another({ store: scoped });
    const { run } = await dying.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: REDUCER },
        input: { children: [{ input: { leaf: 'complete' } }] },
      },
      alice,
    );
    await t.drainMessages();
    await expect(dying.stepRun(run.run_id)).rejects.toThrow('worker killed');
    const [summary] = await engine.listChildren(run.run_id, alice);
    const childId = summary?.run_id ?? '';
    // The child runs to its end while its parent's delegate operation is still in flight.
    await settle(t, engine);
    const ended = await record(store, childId);
    expect(ended.status).toBe('completed');
    expect('owed' in ended && ended.owed).toEqual(['handback']); // deferred: the parent does not wait yet

    // Act: the lease expires; the sweeper takes over and a fresh worker dispatches again.
    t.clock.advance(LEASE_TTL_MS + defaultClockSkewMs(LEASE_TTL_MS) + 1_000);
    const report = await sweepRuns(engine, [run.run_id, childId]);
    await settle(t, engine);
    await sweepRuns(engine, [run.run_id, childId]);

    // Assert
    expect(report.taken_over).toBe(1);
    expect(await engine.listChildren(run.run_id, alice)).toHaveLength(1);
    const parent = await record(store, run.run_id);
    expect(parent.status === 'completed' && parent.summary).toBe('succeeded:completed');
    expect((await eventsOf(engine, run.run_id)).filter((e) => e.kind === 'tool_result')).toHaveLength(1);
    const child = await record(store, childId);
    expect('owed' in child && child.owed).toEqual([]);
  });

  describe('tree bounds and the live-run quota', () => {
    const background = { input: { leaf: 'ask' }, wait: false };

    it("refuses a child past the root principal's live-run quota as quota_exceeded, counting and writing nothing; a child's end frees its slot", async () => {
      // Prepare: alice may hold 4 live runs; the parent holds one, three background children the rest.
      const { t, store, engine } = await setup({ admission: { max_live_runs: 4 } });
      const { run } = await engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: { function_path: REDUCER },
          input: { children: [background, background, background, background, 'pause', background] },
        },
        alice,
      );

      // Act
      await settle(t, engine);

      // Assert: the 4th child is refused as the call's tool result; nothing of it exists.
      expect(await resultCodes(engine, run.run_id)).toEqual([
        'succeeded',
        'succeeded',
        'succeeded',
        'quota_exceeded',
      ]);
      const refused = (await eventsOf(engine, run.run_id)).filter((e) => e.kind === 'tool_result')[3];
      expect(refused?.data.envelope).toMatchObject({ status: 'failed', retry_policy: { retryable: false } });
      const parent = await record(store, run.run_id);
      expect(parent.status).toBe('waiting'); // asks "continue?"
      expect(parent.counters.children).toBe(3);
      expect(parent.live_children).toHaveLength(3);
      const children = await engine.listChildren(run.run_id, alice);
      expect(children).toHaveLength(3);
      expect(children.every((c) => c.status === 'waiting')).toBe(true);
      const quota = await store.readQuota('user:alice', quotaWindowOf(t.clock.now()));
      expect([...quota.held_slots].sort()).toEqual([0, 1, 2, 3]);
      // A top-level create is refused too: the children hold alice's slots.
      await expect(
        engine.createRun({ subject: uniqueSubject(), reducer: null, input: 'x' }, alice),
      ).rejects.toMatchObject({ code: 'quota_exceeded', details: { limit: 'max_live_runs' } });

      // Act: one child ends (stopped); then alice lets the parent go on.
      const ended = children[0]?.run_id ?? '';
      await engine.applyControl(ended, { control_id: 'stop-child', command: 'stop' }, alice);
      await settle(t, engine);
      const freed = await store.readQuota('user:alice', quotaWindowOf(t.clock.now()));
      expect(freed.held_slots).toHaveLength(3);
      const asked = (await record(store, run.run_id)).open_requests.find((r) => r.kind === 'input');
      await engine.applyControl(
        run.run_id,
        { control_id: 'go-on', command: 'provide_input', request_id: asked?.request_id ?? '', value: 'yes' },
        alice,
      );
      await settle(t, engine);

      // Assert: the next delegation takes the freed slot.
      expect(await resultCodes(engine, run.run_id)).toEqual([
        'succeeded',
        'succeeded',
        'succeeded',
        'quota_exceeded',
        'succeeded',
      ]);
      const after = await record(store, run.run_id);
      expect(after.counters.children).toBe(4);
      expect(await engine.listChildren(run.run_id, alice)).toHaveLength(4);
      // The fourth child's subject is /children/4: the refused delegation took no number.
      const kids = await Promise.all(
        (await engine.listChildren(run.run_id, alice)).map((c) => record(store, c.run_id)),
      );
      const fourth = kids.find((k) => k.subject.path.endsWith('/children/4'));
      expect(fourth?.quota_slot).toBeTypeOf('number');
      expect(kids.filter((k) => k.subject.path.endsWith('/children/5'))).toEqual([]);
      // The parent then ended and stopped its children: every slot of alice's is free again.
      expect(after.status).toBe('completed');
      expect(kids.every((k) => k.status === 'stopped')).toBe(true);
      expect((await store.readQuota('user:alice', quotaWindowOf(t.clock.now()))).held_slots).toEqual([]);
    });

    it('reads the quota again when another create took the slot first (quota_moved), instead of failing the call', async () => {
      // Prepare: the first commit of a child loses its slot to a concurrent create.
      let moved = 0;
      const { t, store, engine } = await setup({
        admission: { max_live_runs: 3 },
        store: (s) =>
          wrapStore(s, {
            async commit(c) {
              if (moved === 0 && c.parentLink !== undefined && c.quota !== undefined) {
                moved += 1;
                throw new CommitRejected('quota_moved', 'injected: another create took the slot');
              }
              return s.commit(c);
            },
          }),
      });
      const { run } = await engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: { function_path: REDUCER },
          input: { children: [{ input: { leaf: 'complete' } }] },
        },
        alice,
      );
      await settle(t, engine);

      expect(moved).toBe(1);
      expect(await resultCodes(engine, run.run_id)).toEqual(['succeeded']);
      const [child] = await engine.listChildren(run.run_id, alice);
      expect((await record(store, child?.run_id ?? '')).quota_slot).toBeTypeOf('number');
      expect((await record(store, run.run_id)).counters.children).toBe(1);
    });

    it('refuses the 17th child of a run as child_limit_reached, by default', async () => {
      const { t, store, engine } = await setup();
      const leaf = { input: { leaf: 'complete' } };
      const { run } = await engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: { function_path: REDUCER },
          input: { children: Array.from({ length: 17 }, () => leaf) },
        },
        alice,
      );
      await settle(t, engine, 200);

      const codes = await resultCodes(engine, run.run_id);
      expect(codes).toHaveLength(17);
      expect(codes.slice(0, 16).every((c) => c === 'succeeded')).toBe(true);
      expect(codes[16]).toBe('child_limit_reached');
      const parent = await record(store, run.run_id);
      expect(parent.status).toBe('completed');
      expect(parent.counters.children).toBe(16);
      expect(await engine.listChildren(run.run_id, alice)).toHaveLength(16);
    });

    it('takes the bounds from the deployment: max_children_per_run 2 refuses the 3rd', async () => {
      const { t, engine } = await setup({ admission: { max_children_per_run: 2 } });
      const leaf = { input: { leaf: 'complete' } };
      const { run } = await engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: { function_path: REDUCER },
          input: { children: [leaf, leaf, leaf] },
        },
        alice,
      );
      await settle(t, engine);
      expect(await resultCodes(engine, run.run_id)).toEqual([
        'succeeded',
        'succeeded',
        'child_limit_reached',
      ]);
    });

    it('refuses a child at depth 5 as tree_depth_exceeded, by default', async () => {
      const { t, store, engine } = await setup();
      // Six nested levels: runs at depths 0..4 each delegate once; the one at depth 4 is refused.
      let input: unknown = { leaf: 'complete' };
      for (let d = 0; d < 6; d += 1) input = { children: [{ input }] };
      const { run } = await engine.createRun(
        { subject: uniqueSubject(), reducer: { function_path: REDUCER }, input },
        alice,
      );
      await settle(t, engine, 100);

      let current = await record(store, run.run_id);
      for (let depth = 1; depth <= 4; depth += 1) {
        const kids = await engine.listChildren(current.run_id, alice);
        expect(kids).toHaveLength(1);
        current = await record(store, kids[0]?.run_id ?? '');
        expect(current.depth).toBe(depth);
      }
      expect(await engine.listChildren(current.run_id, alice)).toEqual([]);
      expect(await resultCodes(engine, current.run_id)).toEqual(['tree_depth_exceeded']);
      expect(current.counters.children).toBe(0);
      expect(current.status).toBe('completed');
      expect((await record(store, run.run_id)).status).toBe('completed');
    });
  });
});
