/**
 * The live airline world without the stack: the copy-on-write database and its atomic commit,
 * receipts keyed on the operation id through the real tool host, the envelopes, and the
 * recomputed benchmark verdict.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/core/canonical.ts';
import { validateToolResult } from '../../lib/core/tool-result-validation.ts';
import { loadTrajectories, type TauTrajectory } from '../../lib/models/tau-bench.ts';
import {
  type AirlineBase,
  AirlineStore,
  compareStores,
  loadAirlineBase,
} from '../../lib/replay/airline/database.ts';
import { createLiveWorld, withTodaysAddressKey } from '../../lib/replay/airline/live-world.ts';
import { AIRLINE_TOOLS, runTool } from '../../lib/replay/airline/tools.ts';
import { judgeConversation, outputsSaid, TauTaskInfo } from '../../lib/replay/airline/verdict.ts';
import { prepareConversation, type ReplayConversation } from '../../lib/replay/conversations.ts';
import {
  createAuditLog,
  createPolicyGate,
  createToolHost,
  createToolRegistry,
} from '../../lib/tools/index.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

let base: AirlineBase;
let trajectories: TauTrajectory[];
let toolsJson: unknown;

beforeAll(async () => {
  base = await loadAirlineBase(join(TAU_BENCH_DIR, 'db'));
  trajectories = await loadTrajectories(join(TAU_BENCH_DIR, 'trajectories.json'));
  toolsJson = JSON.parse(await readFile(join(TAU_BENCH_DIR, 'tools.json'), 'utf8'));
});

function exec(store: AirlineStore, name: string, args: Record<string, unknown>): string {
  const tool = AIRLINE_TOOLS.get(name);
  if (tool === undefined) throw new Error(name);
  const tx = store.begin();
  const out = runTool(tool, tx, args);
  store.commit(tx, undefined);
  return out;
}

/** A conversation's recorded calls run on `store`, in order. */
function replayCalls(store: AirlineStore, conversation: ReplayConversation): void {
  for (const call of conversation.toolCalls) exec(store, call.name, JSON.parse(canonicalJson(call.args)));
}

function conversation(taskId: number, trial: number): ReplayConversation {
  const traj = trajectories.find((t) => t.task_id === taskId && t.trial === trial);
  if (traj === undefined) throw new Error(`no trajectory ${taskId}:${trial}`);
  return prepareConversation(withTodaysAddressKey(traj).trajectory);
}

describe('copy-on-write airline database', () => {
  it('changes a private copy: the shared base and other conversations keep the original', () => {
    const a = new AirlineStore(base);
    const b = new AirlineStore(base);
    const original = canonicalJson(base.reservations.get('NO6JO3'));
    exec(a, 'cancel_reservation', { reservation_id: 'NO6JO3' });
    expect(a.reservation('NO6JO3')?.status).toBe('cancelled');
    expect(canonicalJson(b.reservation('NO6JO3'))).toBe(original);
    expect(canonicalJson(base.reservations.get('NO6JO3'))).toBe(original);
    expect(Object.isFrozen(base.reservations.get('NO6JO3')?.payment_history)).toBe(true);
    expect(b.changedIds()).toEqual({ reservations: [], users: [] });
    expect(a.privateBytes()).toBeLessThan(2_000);
  });

  it('installs a change and its receipt together, and refuses a transaction begun before another commit', () => {
    const store = new AirlineStore(base);
    const stale = store.begin();
    const fresh = store.begin();
    const cancel = AIRLINE_TOOLS.get('cancel_reservation');
    if (cancel === undefined) throw new Error('no tool');
    const output = runTool(cancel, fresh, { reservation_id: 'NO6JO3' });
    store.commit(fresh, { operation_id: 'op-1', tool: 'cancel_reservation', args: '{}', output });
    expect(store.receipt('op-1')?.output).toBe(output);
    expect(store.reservation('NO6JO3')?.status).toBe('cancelled');

    runTool(cancel, stale, { reservation_id: 'NO6JO3' });
    expect(() =>
      store.commit(stale, { operation_id: 'op-2', tool: 'cancel_reservation', args: '{}', output: '' }),
    ).toThrow(/newer snapshot/);
    expect(store.receipt('op-2')).toBeUndefined();
    expect(store.reservation('NO6JO3')?.payment_history).toHaveLength(2);
  });

  it('compares databases with key order ignored and list order kept', () => {
    const a = new AirlineStore(base);
    const b = new AirlineStore(base);
    exec(a, 'update_reservation_passengers', {
      reservation_id: '4WQ150',
      passengers: [
        { first_name: 'Chen', last_name: 'Jackson', dob: '1956-07-07' },
        { first_name: 'Raj', last_name: 'Smith', dob: '1967-04-01' },
        { first_name: 'Fatima', last_name: 'Martin', dob: '1970-01-20' },
      ],
    });
    expect(compareStores(a, b)).toEqual([]);
    exec(b, 'update_reservation_passengers', {
      reservation_id: '4WQ150',
      passengers: [
        { first_name: 'Raj', last_name: 'Smith', dob: '1967-04-01' },
        { first_name: 'Chen', last_name: 'Jackson', dob: '1956-07-07' },
        { first_name: 'Fatima', last_name: 'Martin', dob: '1970-01-20' },
      ],
    });
    expect(compareStores(a, b).map((d) => d.path)).toEqual(['/reservations/4WQ150']);
  });
});

describe('live airline world through the tool host', () => {
  function setup(key: ReplayConversation) {
    const world = createLiveWorld(base, [key]);
    const registry = createToolRegistry();
    world.registerTools(registry, toolsJson);
    const host = createToolHost({
      registry,
      gate: createPolicyGate([]),
      audit: createAuditLog(() => {}, { clock: { now: () => 0 } }),
    });
    const call = (tool: string, args: Record<string, unknown>, opId: string, mutating: boolean) =>
      host.execute(
        {
          run_id: 'run-1',
          op_id: opId,
          tool,
          args,
          principal: { kind: 'user', id: 'replay' },
          attempt: 1,
          mutating,
          replay_safe: true,
          subject: key.subject,
        },
        new AbortController().signal,
      );
    return { world, call };
  }

  it('answers a re-dispatched mutating operation from its receipt and changes nothing', async () => {
    const c = conversation(0, 0);
    const { world, call } = setup(c);
    const first = await call('cancel_reservation', { reservation_id: 'NO6JO3' }, 'run-1/op/7', true);
    const again = await call('cancel_reservation', { reservation_id: 'NO6JO3' }, 'run-1/op/7', true);
    expect(again).toEqual(first);
    const db = world.finalDatabase(c.key);
    expect(db?.reservations.NO6JO3?.payment_history).toHaveLength(2);
    const other = await call('cancel_reservation', { reservation_id: 'NO6JO3' }, 'run-1/op/8', true);
    expect(other.status).toBe('succeeded');
    expect(world.finalDatabase(c.key)?.reservations.NO6JO3?.payment_history).toHaveLength(4);
    const assessed = world.assess(c, []);
    expect(assessed).toMatchObject({ mutating_executed: 2, receipts_replayed: 1 });
  });

  it('refuses an operation id reused for another call, changing nothing', async () => {
    const c = conversation(0, 0);
    const { world, call } = setup(c);
    await call('cancel_reservation', { reservation_id: 'NO6JO3' }, 'run-1/op/7', true);
    const reused = await call('cancel_reservation', { reservation_id: '4WQ150' }, 'run-1/op/7', true);
    expect(reused).toMatchObject({ status: 'failed', error_class: 'conflict' });
    expect(world.finalDatabase(c.key)?.reservations['4WQ150']?.status).toBeUndefined();
  });

  it('returns valid envelopes: the output as payload, reads and writes in the conversation database', async () => {
    const c = conversation(0, 0);
    const { call } = setup(c);
    const done = await call('cancel_reservation', { reservation_id: 'NO6JO3' }, 'run-1/op/7', true);
    expect(validateToolResult(done).ok).toBe(true);
    const path = `${c.subject.path}/db/reservations/NO6JO3`;
    expect(done).toMatchObject({
      status: 'succeeded',
      reads: [{ read_id: '/reservations/NO6JO3', locator: { workspace: c.subject.workspace, path } }],
      writes: [{ locator: { path }, action: 'updated', revision: { value: '1', alg: 'record-version' } }],
      artifact_refs: [{ kind: 'reservation', role: 'primary', locator: { path } }],
    });
    expect(String(done.payload)).toMatch(/^\{"reservation_id": "NO6JO3"/);
    const missing = await call('cancel_reservation', { reservation_id: 'ZZZZZZ' }, 'run-1/op/9', true);
    expect(missing).toMatchObject({
      status: 'failed',
      error_class: 'not_found',
      payload: 'Error: reservation not found',
      writes: [],
    });
  });

  it('follows the recording: counts identical outputs and reports a call that is not the next recorded one', async () => {
    const c = conversation(0, 0);
    const { world, call } = setup(c);
    const [first] = c.toolCalls;
    if (first === undefined) throw new Error('no recorded call');
    await call(first.name, first.args, 'run-1/op/2', false);
    await call(first.name, first.args, 'run-1/op/2', false);
    expect(world.assess(c, [])).toMatchObject({
      outputs_compared: 1,
      outputs_identical: 1,
      reads_repeated: 1,
    });
    await call('list_all_airports', {}, 'run-1/op/4', false);
    expect(world.stats(c.key).divergences).toMatchObject([{ got: { name: 'list_all_airports' } }]);
  });
});

describe('recomputed benchmark verdict', () => {
  it('agrees with every recorded reward except the one conversation the benchmark never judged', () => {
    const disagreeing: string[] = [];
    for (const traj of trajectories) {
      const c = prepareConversation(withTodaysAddressKey(traj).trajectory);
      const store = new AirlineStore(base);
      replayCalls(store, c);
      const verdict = judgeConversation(store, c.recording.messages, TauTaskInfo.parse(c.info), traj.reward);
      if (!verdict.agrees) disagreeing.push(`${c.key}:${verdict.reward}:${verdict.recorded_judged}`);
    }
    // 46:3 stopped at the benchmark's 30-step limit: reward 0 without a verdict; its database is right.
    expect(disagreeing).toEqual(['46:3:1:false']);
  });

  it('turns a cancellation applied twice into a wrong database', () => {
    const cancels = (call: ReplayConversation['toolCalls'][number]) =>
      call.name === 'cancel_reservation' && !call.output.startsWith('Error');
    const c = trajectories
      .filter((t) => t.reward === 1)
      .map((t) => prepareConversation(withTodaysAddressKey(t).trajectory))
      .find((conv) => conv.toolCalls.some(cancels));
    const cancel = c?.toolCalls.find(cancels);
    if (c === undefined || cancel === undefined) throw new Error('no cancellation in a correct conversation');
    const store = new AirlineStore(base);
    replayCalls(store, c);
    const info = TauTaskInfo.parse(c.info);
    expect(judgeConversation(store, c.recording.messages, info, 1).reward).toBe(1);
    exec(store, cancel.name, cancel.args);
    const verdict = judgeConversation(store, c.recording.messages, info, 1);
    expect(verdict).toMatchObject({ reward: 0, database_matches: false, agrees: false });
    expect(verdict.differences.map((d) => d.path)).toEqual([
      `/reservations/${String(cancel.args.reservation_id)}`,
    ]);
  });

  it('finds a required output in a reply, lowercased and without commas', () => {
    expect(outputsSaid(['23553', 'Yes'], ['The total is $23,553.', 'YES indeed'])).toEqual({
      '23553': true,
      Yes: true,
    });
    expect(outputsSaid(['1786'], ['about 1,787'])).toEqual({ '1786': false });
  });
});
