/**
 * End to end on the local stack: bob's run starts with a 300 KB input (its run_started frame is
 * over MAX_LIVE_FRAME_BYTES, so the socket sends it truncated) while alice follows her own run
 * over the same socket server. Alice's follower yields exactly her run's log; bob's follower
 * (the client library's followLive) yields his run_started whole, read over HTTP.
 * docs/guides/live-streams.md, "Large events".
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type AgentRunsClient, createClient, drive, followLive } from '../../lib/client/index.ts';
import type { LiveServerMessage, RunEvent } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { until } from '../support/local-runtime.ts';

let stack: LocalStack;
const users: Record<'alice' | 'bob', { sub: string; token: string; client: AgentRunsClient }> = {} as never;

beforeAll(async () => {
  stack = await startLocalStack({ port: 0, stateDir: false, logger: SILENT_LOG });
  for (const who of ['alice', 'bob'] as const) {
    const sub = `${who}-${randomUUID().slice(0, 8)}`;
    const token = await stack.issuer.sign({ sub, ttlSeconds: 3600 });
    users[who] = { sub, token, client: createClient({ baseUrl: stack.url, token }) };
  }
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

/** Follows `runId` as `who` with the client library until it settles; the events it yields. */
function follow(who: 'alice' | 'bob', runId: string, connects: number[]): Promise<RunEvent[]> {
  return (async () => {
    const seen: RunEvent[] = [];
    for await (const event of followLive(
      { baseUrl: stack.url, wsUrl: stack.wsUrl, token: users[who].token },
      runId,
      { onConnect: (after) => connects.push(after), reconnectMs: 20 },
    ))
      seen.push(event);
    return seen;
  })();
}

async function complete(who: 'alice' | 'bob', runId: string): Promise<void> {
  await drive(users[who].client, runId, async (session) => {
    await session.operation({ kind: 'model_turn' }, async () => ({
      result: { kind: 'model_turn_completed', message: { text: 'done' }, usage: { input_tokens: 1 } },
    }));
    await session.complete('followed');
  });
}

describe('a run too large for one live frame', () => {
  it("reaches its follower whole over HTTP, and alice's run beside it is followed as ever", {
    timeout: 60_000,
  }, async () => {
    const input = 'i'.repeat(300_000);
    const big = await users.bob.client.createRun({
      subject: { workspace: `user:${users.bob.sub}`, path: `/large/${randomUUID()}` },
      input,
    });
    const small = await users.alice.client.createRun({
      subject: { workspace: `user:${users.alice.sub}`, path: `/small/${randomUUID()}` },
      input: 'small',
    });
    // A raw socket of bob's sees what the server sends: the big run_started truncated.
    const raw: LiveServerMessage[] = [];
    const ws = new WebSocket(`${stack.wsUrl}/?token=${encodeURIComponent(users.bob.token)}`);
    ws.on('message', (data) => raw.push(JSON.parse(String(data)) as LiveServerMessage));
    await new Promise((resolve) => ws.on('open', resolve));
    ws.send(JSON.stringify({ action: 'subscribe', run_id: big.run.run_id, after: 0 }));

    const connects = { alice: [] as number[], bob: [] as number[] };
    const bobs = follow('bob', big.run.run_id, connects.bob);
    const alices = follow('alice', small.run.run_id, connects.alice);
    await until(
      async () => connects.alice.length + Math.min(connects.bob.length, 1),
      (n) => n >= 2,
      10_000,
    );
    await complete('bob', big.run.run_id);
    await complete('alice', small.run.run_id);
    const [bobSeen, aliceSeen] = await Promise.all([bobs, alices]);

    const aliceLog = (await users.alice.client.events(small.run.run_id, { after: 0, limit: 500 })).events;
    expect(aliceSeen).toEqual(aliceLog);
    const bobLog = (await users.bob.client.events(big.run.run_id, { after: 0, limit: 500 })).events;
    expect(bobSeen).toEqual(bobLog);
    expect(bobSeen[0]).toMatchObject({ seq: 1, kind: 'run_started', data: { input } });

    await until(
      async () => raw.find((m) => m.type === 'event' && m.event.seq === 1),
      (m) => m !== undefined,
      10_000,
    );
    const first = raw.find((m) => m.type === 'event' && m.event.seq === 1);
    expect(first).toMatchObject({
      type: 'event',
      truncated: true,
      event: { seq: 1, kind: 'run_started', data: {} },
    });
    ws.close();
  });
});
