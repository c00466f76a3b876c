/**
 * The 14 live airline tools against the benchmark's reference tools: every output recorded in
 * the 160 conversations (the calls run in order on a fresh database per conversation, with the
 * args as the runtime hands them: canonical JSON, keys sorted), and a fixture of further calls
 * whose expected outputs and records came from running the reference tools themselves
 * (test/fixtures/airline/reference-cases.json).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/core/canonical.ts';
import { loadTrajectories, toRecordedConversation } from '../../lib/models/tau-bench.ts';
import { type AirlineBase, AirlineStore, loadAirlineBase } from '../../lib/replay/airline/database.ts';
import { withTodaysAddressKey } from '../../lib/replay/airline/live-world.ts';
import { AIRLINE_TOOLS, runTool } from '../../lib/replay/airline/tools.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

interface ReferenceCase {
  name: string;
  calls: { name: string; args: Record<string, unknown> }[];
  show?: string[];
  expected: { outputs: string[]; show: Record<string, unknown> };
}

const fixture = JSON.parse(
  readFileSync(join(import.meta.dirname, '../fixtures/airline/reference-cases.json'), 'utf8'),
) as { cases: ReferenceCase[] };

let base: AirlineBase;
/** Per tool: [recorded output, live output] of every recorded call. */
const observed = new Map<string, [string, string][]>();

/** The args as the runtime delivers them: a JSON copy with keys in canonical order. */
const asDelivered = (args: unknown): Record<string, unknown> =>
  JSON.parse(canonicalJson(args)) as Record<string, unknown>;

function run(store: AirlineStore, name: string, args: Record<string, unknown>): string {
  const tool = AIRLINE_TOOLS.get(name);
  if (tool === undefined) throw new Error(`no tool ${name}`);
  const tx = store.begin();
  const output = runTool(tool, tx, asDelivered(args));
  store.commit(tx, undefined);
  return output;
}

beforeAll(async () => {
  base = await loadAirlineBase(join(TAU_BENCH_DIR, 'db'));
  for (const traj of await loadTrajectories(join(TAU_BENCH_DIR, 'trajectories.json'))) {
    const recording = toRecordedConversation(withTodaysAddressKey(traj).trajectory);
    const store = new AirlineStore(base);
    const calls = new Map<string, { name: string; args: Record<string, unknown> }>();
    for (const m of recording.messages) {
      if (m.role === 'assistant') for (const c of m.tool_calls) calls.set(c.call_id, c);
      if (m.role !== 'tool') continue;
      const call = calls.get(m.call_id);
      if (call === undefined) throw new Error(`${recording.key}: no call for ${m.call_id}`);
      const list = observed.get(call.name) ?? [];
      list.push([m.content, run(store, call.name, call.args)]);
      observed.set(call.name, list);
    }
  }
});

describe('live airline tools reproduce the recorded outputs', () => {
  it('covers the 949 recorded calls of the 160 conversations', () => {
    const total = [...observed.values()].reduce((n, list) => n + list.length, 0);
    expect(total).toBe(949);
  });

  it.each([...AIRLINE_TOOLS.keys()])('%s gives every recorded output exactly', (name) => {
    const pairs = observed.get(name) ?? [];
    expect(pairs.length).toBeGreaterThan(0);
    const differing = pairs.filter(([recorded, live]) => recorded !== live);
    expect(differing).toEqual([]);
  });
});

describe('live airline tools agree with the reference tools beyond the recordings', () => {
  it.each(fixture.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const store = new AirlineStore(base);
    const outputs = c.calls.map((call) => run(store, call.name, call.args));
    expect(outputs).toEqual(c.expected.outputs);
    for (const path of c.show ?? []) {
      const [kind, id = ''] = path.split('/');
      const record = kind === 'users' ? store.user(id) : store.reservation(id);
      // Same record, same key order (the reference prints records in insertion order).
      expect(JSON.stringify(record ?? null)).toBe(JSON.stringify(c.expected.show[path]));
    }
  });

  it('says why when the user already holds the three certificates it issues (the reference returns None)', () => {
    const store = new AirlineStore(base);
    for (const amount of [10, 20, 30]) run(store, 'send_certificate', { user_id: 'mia_li_3668', amount });
    const before = JSON.stringify(store.user('mia_li_3668'));
    expect(run(store, 'send_certificate', { user_id: 'mia_li_3668', amount: 40 })).toBe(
      'Error: the user already holds the three certificates this tool issues',
    );
    expect(JSON.stringify(store.user('mia_li_3668'))).toBe(before);
  });

  it('stores a record handed in with its keys in another order in the database order (the reference keeps the caller order)', () => {
    const store = new AirlineStore(base);
    const output = run(store, 'update_reservation_passengers', {
      reservation_id: 'NO6JO3',
      passengers: [{ dob: '1990-04-06', last_name: 'Lee', first_name: 'Mia' }],
    });
    expect(output).toContain(
      '"passengers": [{"first_name": "Mia", "last_name": "Lee", "dob": "1990-04-06"}]',
    );
  });

  it('refuses args that do not fit the schema, naming the field', () => {
    const store = new AirlineStore(base);
    expect(run(store, 'cancel_reservation', { reservation_id: 42 })).toMatch(
      /^Error: invalid argument reservation_id: /,
    );
  });
});
