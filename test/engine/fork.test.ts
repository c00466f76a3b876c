/**
 * Forking a run from a checkpoint on the memory engine, with the default agent loop (in process)
 * and a model whose answers follow from what it reads: a fork of an untouched checkpoint makes
 * the original's answers again; a fork of an edited state diverges; the original is not
 * written to; the fork's log is its own run_started, then the original's events to the cutoff
 * read through, then its own. Checkpoints reference the state revision, which reads back the
 * same after later commits (write-once). Who may fork or read state is core/authority.ts's
 * accessOf, as for every read; a fork is its caller's. docs/contracts/run-lifecycle.md,
 * "Checkpoints".
 */
import { describe, expect, it } from 'vitest';
import type { CompiledContext, ModelTurnOutput, RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import type { AdmissionConfig } from '../../lib/core/admission.ts';
import type { ModelHost } from '../../lib/engine/ports.ts';
import { reduce } from '../../lib/reducers/agent-loop/reduce.ts';
import { alice, inProcessReducers, inProcessTools, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';

const LOOP = '/r/agent-loop';

/** Three lookups then an answer; every answer carries the instructions it was given. */
const model: ModelHost = {
  async turn(_input, context: CompiledContext): Promise<ModelTurnOutput> {
    const system = context.messages[0]?.role === 'system' ? context.messages[0].content : '';
    const done = context.messages.filter((m) => m.role === 'assistant').length;
    const usage = { input_tokens: 10, output_tokens: 2 };
    if (done < 3) {
      return {
        message: { text: `step ${done + 1}` },
        tool_calls: [{ call_id: `c${done + 1}`, name: 'lookup', args: { item: done + 1, mood: system } }],
        finish_reason: 'tool_calls',
        usage,
      };
    }
    return { message: { text: `done (${system})` }, tool_calls: [], finish_reason: 'stop', usage };
  },
};

async function setup(admission?: AdmissionConfig) {
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ [LOOP]: (req) => reduce(req) }),
    tools: inProcessTools({ lookup: async (r) => ({ item: r.args.item, mood: r.args.mood }) }),
    models: model,
    ...(admission !== undefined ? { admission } : {}),
  });
  const drive = async (runId: string): Promise<RunRecord> => {
    for (let i = 0; i < 20; i += 1) {
      await t.drainMessages();
      const outcome = await t.engine.stepRun(runId);
      if (outcome.kind === 'nothing_to_do' || (outcome.kind === 'progressed' && outcome.status !== 'queued'))
        break;
    }
    return t.engine.getRun(runId, alice);
  };
  const events = (runId: string) => t.engine.readEvents(runId, alice, 0, 10_000);
  return { t, drive, events };
}

/** The model's answers after `after` (without the context manifest, whose seqs differ on a fork). */
const answers = (events: RunEvent[], after: number) =>
  events
    .filter((e) => e.kind === 'model_turn_completed' && e.seq > after)
    .map(({ data: { manifest: _manifest, ...answer } }) => answer);

describe('forking a run from a checkpoint', () => {
  it('reproduces the answers after an untouched checkpoint and diverges after an edited state', async () => {
    const { t, drive, events } = await setup();
    const { run } = await t.engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: LOOP },
        input: 'look three items up',
        context: { mode: 'task', instructions: 'calm', tools: [{ name: 'lookup', mutating: false }] },
        budgets: { max_turns: 2 },
      },
      alice,
    );
    // Paused by the budget before its third model turn: checkpoint 1, the turn kept pending.
    const paused = await drive(run.run_id);
    expect(paused).toMatchObject({ status: 'paused', pause_reason: 'budget_exceeded:max_turns' });
    const [checkpoint] = await t.engine.listCheckpoints(run.run_id, alice);
    if (checkpoint === undefined) throw new Error('no checkpoint');
    expect(checkpoint).toMatchObject({ n: 1, reason: 'paused', core: { operation: { kind: 'model_turn' } } });
    await t.engine.applyControl(
      run.run_id,
      { control_id: 'r1', command: 'resume', budget_increase: { max_turns: 5 } },
      alice,
    );
    const finished = await drive(run.run_id);
    expect(finished).toMatchObject({ status: 'completed', summary: 'done (calm)' });
    const originalEvents = await events(run.run_id);
    const cutoff = checkpoint.transcript_cutoff_seq;

    const same = await t.engine.forkRun(run.run_id, { checkpoint: 1, subject: uniqueSubject() }, alice);
    expect(same.created).toBe(true);
    expect(same.run).toMatchObject({
      principal: run.principal,
      usage: { turns: 0, model_calls: 0 },
      budgets: { max_turns: 2 },
      origin: { run_id: run.run_id, checkpoint_no: 1, transcript_cutoff_seq: cutoff, state_edited: false },
      operation: {
        kind: 'model_turn',
        op_id: `${same.run.run_id}/op/${checkpoint.core.counters && (checkpoint.core.counters as { next_op: number }).next_op}`,
      },
    });
    const sameDone = await drive(same.run.run_id);
    expect(sameDone).toMatchObject({ status: 'completed', summary: 'done (calm)' });
    const sameEvents = await events(same.run.run_id);
    // The fork's log: its own run_started naming the origin, then the original's events to the cutoff.
    expect(sameEvents[0]).toMatchObject({
      seq: 1,
      kind: 'run_started',
      data: { input: 'look three items up', origin: { run_id: run.run_id } },
    });
    expect(sameEvents.slice(1, cutoff)).toEqual(originalEvents.slice(1, cutoff));
    expect(sameEvents.map((e) => e.seq)).toEqual(sameEvents.map((_, i) => i + 1));
    // After the checkpoint it made the original's answers again.
    expect(answers(sameEvents, cutoff)).toEqual(answers(originalEvents, cutoff));

    const state = await t.engine.getState(run.run_id, alice, checkpoint.state_rev);
    const edited = { ...(state.state as Record<string, unknown>), instructions: 'brisk' };
    const other = await t.engine.forkRun(
      run.run_id,
      { checkpoint: 1, state: edited, subject: uniqueSubject() },
      alice,
    );
    expect(other.run).toMatchObject({
      state_rev: checkpoint.state_rev + 1,
      origin: { state_edited: true, state_digest: state.state_digest },
    });
    const otherDone = await drive(other.run.run_id);
    expect(otherDone).toMatchObject({ status: 'completed', summary: 'done (brisk)' });
    const otherEvents = await events(other.run.run_id);
    expect(otherEvents.slice(1, cutoff)).toEqual(originalEvents.slice(1, cutoff));
    expect(answers(otherEvents, cutoff)).not.toEqual(answers(originalEvents, cutoff));
    expect((await t.engine.getState(other.run.run_id, alice)).state).toMatchObject({ instructions: 'brisk' });

    // The original was not written to by either fork.
    expect(await t.engine.getRun(run.run_id, alice)).toEqual(finished);
    expect(await events(run.run_id)).toEqual(originalEvents);
  });

  it('refuses a fork whose subject has a live run, of a missing checkpoint, and by a stranger, writing nothing', async () => {
    const { t, drive } = await setup();
    const subject = uniqueSubject();
    const { run } = await t.engine.createRun(
      {
        subject,
        reducer: { function_path: LOOP },
        input: 'go',
        context: { mode: 'task', tools: [{ name: 'lookup', mutating: false }] },
        budgets: { max_turns: 1 },
      },
      alice,
    );
    await drive(run.run_id);
    await expect(t.engine.forkRun(run.run_id, { checkpoint: 1 }, alice)).rejects.toMatchObject({
      code: 'subject_taken',
    });
    await expect(
      t.engine.forkRun(run.run_id, { checkpoint: 9, subject: uniqueSubject() }, alice),
    ).rejects.toMatchObject({ code: 'checkpoint_not_found' });
    await expect(t.engine.forkRun(run.run_id, { checkpoint: 1, budget: {} }, alice)).rejects.toMatchObject({
      code: 'validation_failed',
    });
    await expect(
      t.engine.forkRun(
        run.run_id,
        { checkpoint: 1, subject: uniqueSubject() },
        { principal: { kind: 'user', id: 'mallory' } },
      ),
    ).rejects.toMatchObject({ code: 'run_not_found' });
    expect(await t.store.listByStatus('queued', 10)).toMatchObject({ run_ids: [] });
  });

  it('decides who may fork and read state as every read does, and gives the fork to its caller', async () => {
    const { t, drive } = await setup();
    const created = await t.engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: LOOP },
        input: 'go',
        context: { mode: 'task', tools: [{ name: 'lookup', mutating: false }] },
        budgets: { max_turns: 1 },
      },
      alice,
    );
    const runId = created.run.run_id;
    const capability = created.control_capability ?? '';
    await drive(runId);
    const mallory = { principal: { kind: 'user' as const, id: 'mallory' } };
    // In mallory's own workspace: a fork is created in a workspace granted to its caller.
    const fork = { checkpoint: 1, subject: uniqueSubject('mallory') };
    // A stranger: the run does not exist, for a fork, a state read, or with a wrong capability.
    await expect(t.engine.getState(runId, mallory)).rejects.toMatchObject({ code: 'run_not_found' });
    await expect(t.engine.forkRun(runId, fork, { ...mallory, capability: 'not-it' })).rejects.toMatchObject({
      code: 'run_not_found',
    });
    // Its principal with a capability that does not match: refused, not ignored.
    await expect(t.engine.forkRun(runId, fork, { ...alice, capability: 'not-it' })).rejects.toMatchObject({
      code: 'capability_invalid',
    });
    await expect(t.engine.getState(runId, { ...alice, capability: 'not-it' })).rejects.toMatchObject({
      code: 'capability_invalid',
    });
    expect(await t.store.listByStatus('queued', 10)).toMatchObject({ run_ids: [] });
    // Whoever holds the capability may read the state and fork: the fork is theirs, not alice's.
    const holder = { ...mallory, capability };
    expect(await t.engine.getState(runId, holder)).toMatchObject({ run_id: runId });
    const theirs = await t.engine.forkRun(runId, { ...fork, create_key: 'k1' }, holder);
    expect(theirs).toMatchObject({ created: true, run: { principal: { kind: 'user', id: 'mallory' } } });
    await expect(t.engine.getRun(theirs.run.run_id, alice)).rejects.toMatchObject({ code: 'run_not_found' });
    expect(await t.engine.getRun(theirs.run.run_id, mallory)).toMatchObject({ run_id: theirs.run.run_id });
    // The create key is the caller's, bound to the fork request it was used for.
    expect(await t.engine.forkRun(runId, { ...fork, create_key: 'k1' }, holder)).toMatchObject({
      created: false,
      run: { run_id: theirs.run.run_id },
    });
    await expect(
      t.engine.forkRun(runId, { ...fork, checkpoint: 2, create_key: 'k1' }, holder),
    ).rejects.toMatchObject({ code: 'create_key_reused' });
    // alice's own fork is alice's.
    const own = await t.engine.forkRun(runId, { checkpoint: 1, subject: uniqueSubject() }, alice);
    expect(own.run.principal).toEqual(alice.principal);
  });

  it("admits a fork as the caller's create: its live-run quota, the original's risk tier", async () => {
    const { t, drive } = await setup({ max_live_runs: 1 });
    const { run } = await t.engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: LOOP },
        input: 'go',
        context: { mode: 'task', tools: [{ name: 'lookup', mutating: false }] },
        budgets: { max_turns: 1 },
        risk_tier: 'high',
      },
      alice,
    );
    expect(await drive(run.run_id)).toMatchObject({ status: 'paused' });
    // The paused original holds alice's one live-run slot: a fork would be a second live run.
    await expect(
      t.engine.forkRun(run.run_id, { checkpoint: 1, subject: uniqueSubject() }, alice),
    ).rejects.toMatchObject({ code: 'quota_exceeded', details: { limit: 'max_live_runs' } });
    expect(await t.store.listByStatus('queued', 10)).toMatchObject({ run_ids: [] });
    await t.engine.applyControl(run.run_id, { control_id: 's', command: 'stop' }, alice);
    await drive(run.run_id);
    const fork = await t.engine.forkRun(run.run_id, { checkpoint: 1, subject: uniqueSubject() }, alice);
    expect(fork.run).toMatchObject({ risk_tier: 'high', quota_slot: 0 });
  });

  it('reads a state revision back unchanged after later commits, and refuses a second write of it', async () => {
    const { t, drive } = await setup();
    const { run } = await t.engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: LOOP },
        input: 'go',
        context: { mode: 'task', instructions: 'calm', tools: [{ name: 'lookup', mutating: false }] },
        budgets: { max_turns: 2 },
      },
      alice,
    );
    await drive(run.run_id);
    const [checkpoint] = await t.engine.listCheckpoints(run.run_id, alice);
    if (checkpoint === undefined) throw new Error('no checkpoint');
    const first = await t.engine.getState(run.run_id, alice, checkpoint.state_rev);
    await t.engine.applyControl(
      run.run_id,
      { control_id: 'r', command: 'resume', budget_increase: { max_turns: 9 } },
      alice,
    );
    const done = await drive(run.run_id);
    expect(done.state_rev).toBeGreaterThan(checkpoint.state_rev);
    expect(await t.engine.getState(run.run_id, alice, checkpoint.state_rev)).toEqual(first);
    // Write one revision twice (two commits without events: each writes the D# item): the second
    // is refused whole and the revision reads back as first written.
    const stored = await t.store.getRun(run.run_id);
    if (stored === null) throw new Error('no run');
    const rev = stored.state_rev + 1;
    const once = await t.store.commit({
      record: { ...stored, state_rev: rev },
      expectedVersion: stored.version,
      events: [],
      state: { rev, value: { written: 'first' } },
    });
    await expect(
      t.store.commit({
        record: once,
        expectedVersion: once.version,
        events: [],
        state: { rev, value: { written: 'second' } },
      }),
    ).rejects.toThrow();
    expect((await t.engine.getState(run.run_id, alice, rev)).state).toEqual({ written: 'first' });
    expect((await t.engine.getState(run.run_id, alice)).state).toEqual({ written: 'first' });
    await expect(t.engine.getState(run.run_id, alice, rev + 1)).rejects.toMatchObject({
      code: 'state_not_found',
    });
  });
});
