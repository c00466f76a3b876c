/**
 * Write units per operation on the replay's workload (issue 18, point 4): replays the first
 * `limit` recorded airline conversations over the live tools on the local stack (DynamoDB Local
 * + fauxqs, started here), and reports the write units the run store consumed per operation
 * (model turns and tool calls) beside the payload floor: the bytes the commits had to persist
 * (their events and domain states, JSON), at 1 unit per KB. Target: at most twice the floor.
 * Run: `npx node bench/replay-writes.bench.ts [limit] [file]` (default 20 conversations of
 * data/tau-bench-airline/trajectories.json). Writes
 * reports/bench-replay-writes.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { RunStore } from '../lib/engine/ports.ts';
import { localReplayStack } from '../lib/replay/local.ts';
import { runReplay } from '../lib/replay/run-replay.ts';

const LIMIT = Number(process.argv[2] ?? 20);
const FILE = resolve(process.argv[3] ?? 'data/tau-bench-airline/trajectories.json');
const REPORT = 'reports/bench-replay-writes.json';
const TARGET_FLOOR_RATIO = 2;

let store: RunStore | undefined;
let payloadBytes = 0;
let commits = 0;
const report = await runReplay({
  file: FILE,
  toolsFile: resolve(FILE, '..', 'tools.json'),
  world: 'live',
  chaos: false,
  seed: 1,
  concurrency: 8,
  limit: LIMIT,
  reportPath: 'reports/replay-writes-replay.json',
  progress: false,
  startStack: localReplayStack({
    onReady: (stack) => {
      store = stack.store;
      // Count what every commit must persist: its events and its domain state, as JSON.
      const commit = stack.store.commit.bind(stack.store);
      (stack.store as { commit: RunStore['commit'] }).commit = async (c) => {
        const out = await commit(c);
        commits += 1;
        payloadBytes += Buffer.byteLength(JSON.stringify(c.events));
        if (c.state !== undefined) payloadBytes += Buffer.byteLength(JSON.stringify(c.state.value ?? null));
        return out;
      };
    },
  }),
  out: () => {},
});
if (store === undefined) throw new Error('the stack never started');
const s = report.summary;
const operations = s.model_turns + s.tool_calls;
const round = (x: number) => Math.round(x * 1000) / 1000;
const writeUnits = store.metrics.writeCapacity;
const result = {
  bench: 'replay-writes',
  conversations: s.conversations,
  identical: s.identical,
  operations,
  commits,
  write_units: round(writeUnits),
  write_units_per_operation: round(writeUnits / operations),
  payload_bytes_per_operation: round(payloadBytes / operations),
  payload_floor_write_units_per_operation: round(payloadBytes / 1024 / operations),
  ratio_to_floor: round(writeUnits / (payloadBytes / 1024)),
  target_ratio: TARGET_FLOOR_RATIO,
  target_met: writeUnits / (payloadBytes / 1024) <= TARGET_FLOOR_RATIO,
};
const row = (name: string, value: string | number) => console.log(`${name.padEnd(52)} ${value}`);
console.log(`replay writes: ${s.conversations} conversations (${s.identical} identical), live world`);
row('operations (model turns + tool calls) / commits', `${operations} / ${commits}`);
row('write units per operation (all-in)', result.write_units_per_operation);
row(
  'payload floor per operation (1 unit per KB)',
  `${result.payload_floor_write_units_per_operation} (${result.payload_bytes_per_operation} bytes)`,
);
row(
  'all-in / floor',
  `${result.ratio_to_floor}x (target <= ${TARGET_FLOOR_RATIO}x: ${result.target_met ? 'met' : 'NOT met'})`,
);
mkdirSync('reports', { recursive: true });
writeFileSync(REPORT, `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote ${REPORT}`);
