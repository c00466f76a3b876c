/**
 * End to end on the local stack, configured through its environment as a deployment would be
 * (AGENT_RUNS_LIVE_MAX_CONNECTIONS=2, AGENT_RUNS_LIVE_IDLE_MS=300): bob's third live socket is
 * refused 429 while alice's opens, and alice follows a run she drives through the socket
 * server's idle closes, yielding exactly the run's log.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type AgentRunsClient, createClient, drive, followLive } from '../../lib/client/index.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { until } from '../support/local-runtime.ts';

let stack: LocalStack;
let alice: { sub: string; token: string; client: AgentRunsClient };
let bob: string;
const saved = { ...process.env };

beforeAll(async () => {
  // This file's worker only: the stack reads its bounds from the environment, as in Lambda.
  process.env.AGENT_RUNS_LIVE_MAX_CONNECTIONS = '2';
  process.env.AGENT_RUNS_LIVE_IDLE_MS = '300';
  stack = await startLocalStack({ port: 0, stateDir: false, logger: SILENT_LOG });
  const sub = `alice-${randomUUID().slice(0, 8)}`;
  const token = await stack.issuer.sign({ sub, ttlSeconds: 3600 });
  alice = { sub, token, client: createClient({ baseUrl: stack.url, token }) };
  bob = await stack.issuer.sign({ sub: `bob-${randomUUID().slice(0, 8)}`, ttlSeconds: 3600 });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  process.env = saved;
});

/** The status of an upgrade with `token`: 101 when it opened (kept open in `keep`). */
function upgrade(token: string, keep: WebSocket[]): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${stack.wsUrl}/?token=${encodeURIComponent(token)}`);
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => {
      keep.push(ws);
      resolve(101);
    });
    ws.on('error', () => {});
  });
}

describe('the live socket on the local stack, bounded by its environment', () => {
  it("refuses bob's third socket with 429 and opens alice's", async () => {
    const open: WebSocket[] = [];
    expect([await upgrade(bob, open), await upgrade(bob, open)]).toEqual([101, 101]);
    expect(await upgrade(bob, open)).toBe(429);
    expect(await upgrade(alice.token, open)).toBe(101);
    for (const ws of open) ws.close();
  });

  it('follows a run through the idle closes, yielding exactly its log', { timeout: 60_000 }, async () => {
    const { run } = await alice.client.createRun({
      subject: { workspace: `user:${alice.sub}`, path: `/live-idle/${randomUUID()}` },
      input: 'follow me through idle closes',
    });
    const seen: RunEvent[] = [];
    const connects: number[] = [];
    const following = (async () => {
      for await (const event of followLive(
        { baseUrl: stack.url, wsUrl: stack.wsUrl, token: alice.token },
        run.run_id,
        { onConnect: (after) => connects.push(after), reconnectMs: 20 },
      ))
        seen.push(event);
    })();

    await until(
      async () => connects.length,
      (n) => n > 0,
      10_000,
    );
    await drive(alice.client, run.run_id, async (session) => {
      for (let burst = 0; burst < 3; burst += 1) {
        const before = connects.length;
        await session.operation({ kind: 'model_turn' }, async () => ({
          result: {
            kind: 'model_turn_completed',
            message: { text: `turn ${burst}` },
            usage: { input_tokens: 1 },
          },
        }));
        // The follower sends nothing: the server closes it idle, and it reconnects.
        await until(
          async () => connects.length,
          (n) => n > before,
          10_000,
        );
      }
      await session.complete('followed through idle closes');
    });
    await following;

    const log = (await alice.client.events(run.run_id, { after: 0, limit: 500 })).events.map((e) => e.seq);
    expect(seen.map((e) => e.seq)).toEqual(log);
    expect(connects.length).toBeGreaterThanOrEqual(4);
  });
});
