/**
 * Memory of the live airline world: the shared base, then 200 conversations' private databases
 * (the 160 recordings, then the first 40 again), each after its recorded calls and its
 * ground-truth actions, beside what one full copy of the database per conversation would cost.
 * Prints heap figures (MB); asserts nothing.
 *
 *   npx node --expose-gc bench/airline-world.bench.ts [DATA_DIR]
 */
import { join, resolve } from 'node:path';
import { canonicalJson } from '../lib/core/canonical.ts';
import { loadTrajectories } from '../lib/models/tau-bench.ts';
import { AirlineStore, loadAirlineBase } from '../lib/replay/airline/database.ts';
import { withTodaysAddressKey } from '../lib/replay/airline/live-world.ts';
import { AIRLINE_TOOLS, runTool } from '../lib/replay/airline/tools.ts';
import { groundTruthStore, TauTaskInfo } from '../lib/replay/airline/verdict.ts';
import { prepareConversation } from '../lib/replay/conversations.ts';

const dir = resolve(process.argv[2] ?? join(import.meta.dirname, '../data/tau-bench-airline'));
const CONVERSATIONS = 200;

const gc = (globalThis as { gc?: () => void }).gc;
function heapMb(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}
if (gc === undefined) console.log('(run with --expose-gc for settled heap figures)');

const conversations = (await loadTrajectories(join(dir, 'trajectories.json'))).map((t) =>
  prepareConversation(withTodaysAddressKey(t).trajectory),
);
const start = heapMb();
const base = await loadAirlineBase(join(dir, 'db'));
const withBase = heapMb();

const started = performance.now();
const kept: AirlineStore[] = [];
let calls = 0;
for (let i = 0; i < CONVERSATIONS; i += 1) {
  const c = conversations[i % conversations.length];
  if (c === undefined) break;
  const store = new AirlineStore(base);
  for (const call of c.toolCalls) {
    const tool = AIRLINE_TOOLS.get(call.name);
    if (tool === undefined) continue;
    const tx = store.begin();
    const output = runTool(tool, tx, JSON.parse(canonicalJson(call.args)));
    store.commit(
      tx,
      tool.mutating
        ? { operation_id: `op-${calls}`, tool: call.name, args: canonicalJson(call.args), output }
        : undefined,
    );
    calls += 1;
  }
  kept.push(store, groundTruthStore(base, TauTaskInfo.parse(c.info).task.actions));
}
const elapsed = performance.now() - started;
const withStores = heapMb();

const copies = [structuredClone(kept[0]?.toJSON())];
const withCopy = heapMb();
const fullCopy = withCopy - withStores;

const perConversation = (withStores - withBase) / CONVERSATIONS;
const rows: [string, string][] = [
  ['shared base (flights, reservations, users)', `${(withBase - start).toFixed(1)} MB`],
  [
    `${CONVERSATIONS} conversations: run + ground-truth stores`,
    `${(withStores - withBase).toFixed(2)} MB (${(perConversation * 1024).toFixed(1)} KB each)`,
  ],
  ['one full copy of the database', `${fullCopy.toFixed(1)} MB`],
  [
    `${CONVERSATIONS} full copies (x2 with ground truth) would be`,
    `${(fullCopy * CONVERSATIONS * 2).toFixed(0)} MB`,
  ],
  ['tool calls executed', `${calls} in ${elapsed.toFixed(0)} ms`],
];
const width = Math.max(...rows.map(([k]) => k.length));
for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
void copies;
void kept;
