/**
 * End to end: following a run live on the local stack while its connection is dropped twice,
 * over the WebSocket (the WebSocket API's protocol, fed by the table's stream) and over
 * server-sent events (through a TCP proxy the test cuts). The events the follower yields are
 * exactly the run's log: every seq once, in order, through `settled`. The run's lifecycle
 * notifications land in the notifications file with increasing seq.
 * docs/contracts/run-lifecycle.md, "over HTTP, WebSocket".
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { runCli } from '../../bin/commands/program.ts';
import {
  type AgentRunsClient,
  createClient,
  type DriveSession,
  drive,
  followLive,
  followSse,
} from '../../lib/client/index.ts';
import { type RunEvent, RunNotification } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { until } from '../support/local-runtime.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

let stack: LocalStack;
let client: AgentRunsClient;
let proxy: TcpProxy;

beforeAll(async () => {
  stack = await startLocalStack({ port: 0, stateDir: false, logger: SILENT_LOG });
  client = createClient({ baseUrl: stack.url, token: stack.token });
  proxy = await startTcpProxy(Number(new URL(stack.url).port));
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await stack?.stop();
});

async function createClientDrivenRun(): Promise<string> {
  const { run } = await client.createRun({
    subject: { workspace: 'e2e', path: `/live/${randomUUID()}` },
    input: 'follow me',
  });
  return run.run_id;
}

/** Three model turns the client reports (two events each). */
async function turns(session: DriveSession, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) {
    await session.operation({ kind: 'model_turn' }, async () => ({
      result: { kind: 'model_turn_completed', message: { text: `turn ${i}` }, usage: { input_tokens: 1 } },
    }));
  }
}

/**
 * Drives a run in three bursts of turns; between bursts it waits until the follower holds every
 * event so far and then cuts its connection (`drop`), so the next burst lands while the
 * follower is away. Resolves when the run completed.
 */
async function driveWithDrops(runId: string, held: () => number, drop: () => void): Promise<void> {
  await drive(client, runId, async (session) => {
    for (let burst = 0; burst < 3; burst += 1) {
      await turns(session, 3);
      if (burst === 2) break;
      const lastSeq = (await client.events(runId, { after: 0, limit: 500 })).last_seq;
      await until(
        async () => held(),
        (n) => n >= lastSeq,
        20_000,
      );
      drop();
    }
    await session.complete('followed');
  });
}

async function fullLog(runId: string): Promise<number[]> {
  return (await client.events(runId, { after: 0, limit: 500 })).events.map((e) => e.seq);
}

describe('following a run live', () => {
  it('over the WebSocket, through two dropped connections, yields exactly the event log', async () => {
    const runId = await createClientDrivenRun();
    const seen: RunEvent[] = [];
    const connects: number[] = [];
    let drops = 0;
    const following = (async () => {
      for await (const event of followLive(
        { baseUrl: stack.url, wsUrl: stack.wsUrl, token: stack.token },
        runId,
        {
          onConnect: (after) => connects.push(after),
        },
      ))
        seen.push(event);
    })();
    await until(
      async () => stack.live.sockets.connections(),
      (n) => n > 0,
      10_000,
    );
    await driveWithDrops(
      runId,
      () => seen.length,
      () => {
        drops += stack.live.sockets.dropConnections();
      },
    );
    await following;

    expect(drops).toBe(2);
    expect(connects.length).toBe(3);
    expect(connects[0]).toBe(0);
    expect(seen.map((e) => e.seq)).toEqual(await fullLog(runId));
    expect(seen.at(-1)?.kind).toBe('run_completed');
  });

  it('over server-sent events, through two cut connections, yields exactly the event log', async () => {
    const runId = await createClientDrivenRun();
    const seen: RunEvent[] = [];
    let cuts = 0;
    const following = (async () => {
      for await (const event of followSse({ baseUrl: proxy.url, token: stack.token }, runId, { wait: 10 }))
        seen.push(event);
    })();
    await driveWithDrops(
      runId,
      () => seen.length,
      () => {
        cuts += proxy.cut() > 0 ? 1 : 0;
      },
    );
    await following;

    expect(cuts).toBe(2);
    expect(seen.map((e) => e.seq)).toEqual(await fullLog(runId));
    expect(seen.at(-1)?.kind).toBe('run_completed');
  });

  it.each(['ws', 'sse'])(
    'agent-runs events --follow --via %s prints every event once until the run ends',
    async (via) => {
      const runId = await createClientDrivenRun();
      const out: string[] = [];
      const cli = runCli(
        COMMANDS,
        [
          '--url',
          stack.url,
          '--token',
          stack.token,
          '--ws-url',
          stack.wsUrl,
          '--json',
          'events',
          runId,
          '--follow',
          '--via',
          via,
        ],
        { out: (t) => out.push(t), err: (t) => out.push(`err: ${t}`), cwd: process.cwd(), env: {} },
      );
      await drive(client, runId, async (session) => {
        await turns(session, 2);
        await session.complete('followed by the CLI');
      });
      expect(await cli).toBe(0);
      expect(out.map((l) => (JSON.parse(l) as RunEvent).seq)).toEqual(await fullLog(runId));
    },
  );

  it('publishes each status change of a run as a notification carrying its seq', async () => {
    const runId = await createClientDrivenRun();
    await drive(client, runId, async (session) => {
      await turns(session, 1);
      await session.complete('notified');
    });
    const notes = await until(
      async () =>
        readFileSync(stack.notificationsFile, 'utf8')
          .split('\n')
          .filter((l) => l.includes(runId))
          .map((l) => RunNotification.parse((JSON.parse(l) as { detail: unknown }).detail)),
      (ns) => ns.some((n) => n.terminal),
      20_000,
    );
    const statuses = [...new Set(notes.map((n) => n.status))];
    expect(statuses).toEqual(['queued', 'running', 'completed']);
    const seqs = notes.map((n) => n.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(notes.at(-1)).toMatchObject({ status: 'completed', terminal: true, previous_status: 'running' });
  });
});
