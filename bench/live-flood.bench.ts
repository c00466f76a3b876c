/**
 * What one principal's flood of live sockets costs another (issue 25, point 3). Starts a local
 * stack in this process; alice and bob each create a run; then times 20 sequential
 * `GET /runs/{alice's run}` of alice (median and max, ms):
 *   baseline                      nothing else going on
 *   unauthenticated storm         1 500 WebSocket upgrades with a bad token at once (the floor)
 *   bob's flood                   1 500 upgrades of bob at once, 5 subscribes to his run on each
 *                                 socket that opens (the adversarial pass: 85 ms became 1.4-3.6 s)
 *   after                         once one of bob's sockets sent 2 000 more subscribes to his run
 * and how many of bob's upgrades opened or were refused 429, and what his subscribes were
 * answered. Prints the figures; asserts nothing. Run: `npm run bench:live-flood`.
 */
import { WebSocket } from 'ws';
import { SILENT_LOG } from '../lib/handlers/observability.ts';
import { startLocalStack } from '../lib/local/stack.ts';

const SOCKETS = 1_500;
const stack = await startLocalStack({ port: 0, stateDir: false, logger: SILENT_LOG });
const alice = await stack.issuer.sign({ sub: 'alice', ttlSeconds: 3600 });
const bob = await stack.issuer.sign({ sub: 'bob', ttlSeconds: 3600 });

async function create(token: string, user: string, path: string): Promise<string> {
  const response = await fetch(`${stack.url}/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ subject: { workspace: `user:${user}`, path }, input: 'x' }),
  });
  return ((await response.json()) as { run: { run_id: string } }).run.run_id;
}
const aliceRun = await create(alice, 'alice', `/flood/${Date.now()}`);
const bobRun = await create(bob, 'bob', `/flood/${Date.now()}`);

/** Median and max (ms) of `n` sequential reads of alice's run by alice. */
async function aliceReads(n = 20): Promise<{ median: number; max: number }> {
  const ms: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const t = performance.now();
    await (
      await fetch(`${stack.url}/runs/${aliceRun}`, { headers: { authorization: `Bearer ${alice}` } })
    ).text();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  const round = (x: number | undefined) => Math.round((x ?? 0) * 10) / 10;
  return { median: round(ms[Math.floor(n / 2)]), max: round(ms.at(-1)) };
}

const answers: Record<string, number> = {};
const upgrades = { opened: 0, refused_429: 0, refused_other: 0 };
const sockets: WebSocket[] = [];
const subscribe = (ws: WebSocket) =>
  ws.send(JSON.stringify({ action: 'subscribe', run_id: bobRun, after: 0 }));

/** One upgrade with `token`; an open socket of bob's subscribes 5 times. */
function upgrade(token: string): Promise<void> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${stack.wsUrl}/?token=${encodeURIComponent(token)}`);
    ws.on('unexpected-response', (_req, res) => {
      if (token === bob) upgrades[res.statusCode === 429 ? 'refused_429' : 'refused_other'] += 1;
      resolve();
    });
    ws.on('error', () => resolve());
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { type: string; code?: string };
      const key = m.type === 'error' ? `error ${m.code}` : m.type;
      answers[key] = (answers[key] ?? 0) + 1;
    });
    ws.on('open', () => {
      if (token !== bob) {
        ws.terminate();
        return resolve();
      }
      upgrades.opened += 1;
      sockets.push(ws);
      for (let i = 0; i < 5; i += 1) subscribe(ws);
      resolve();
    });
  });
}

/** Alice's reads while `load` runs. */
async function during(load: () => Promise<unknown>) {
  const running = load();
  const reads = await aliceReads();
  await running;
  return reads;
}

const figures = {
  baseline: await aliceReads(),
  unauthenticated_storm: await during(() =>
    Promise.all(Array.from({ length: SOCKETS }, () => upgrade('bad'))),
  ),
  bobs_flood: await during(() => Promise.all(Array.from({ length: SOCKETS }, () => upgrade(bob)))),
  after: { median: 0, max: 0 },
};
const first = sockets[0];
if (first !== undefined) for (let i = 0; i < 2_000; i += 1) subscribe(first);
await new Promise((r) => setTimeout(r, 3_000));
figures.after = await aliceReads();

console.log(JSON.stringify({ alice_get_ms: figures, bob_upgrades: upgrades, bob_answers: answers }, null, 2));
for (const ws of sockets) ws.terminate();
await stack.stop();
