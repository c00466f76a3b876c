/**
 * Exact event streams over HTTP, on DynamoDB Local with the users alice and
 * bob: a long poll (`GET /runs/{id}/events`) or an SSE request (`GET /runs/{id}/events/stream`)
 * from cursor N gets each seq > N once, and a client that reconnects from the last seq it
 * received (SSE: Last-Event-ID, with the first request's `after=` still in the URL, as
 * EventSource does) gets every seq exactly once in all; a cursor beyond the log's head is refused
 * 409 `cursor_ahead` on both, with or without a wait, while to bob, who may not see the run,
 * every such request is the 404 of an unknown run (nothing of its log is revealed). The socket's
 * own refusal: test/unit/live-fan-out.test.ts. README "Following a run live" states these.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';

const TAG = randomUUID().slice(0, 8);
const ALICE = `cursor-alice-${TAG}`;

let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('live-cursors'));
  app = createHttpApp({
    ...runtime,
    auth: anyOf(
      bearerTokenAuth('alice', { kind: 'user', id: ALICE }, { admin: false }),
      bearerTokenAuth('bob', { kind: 'user', id: `cursor-bob-${TAG}` }, { admin: false }),
    ),
    pollIntervalMs: 20,
    log: () => {},
  });
});

afterAll(() => runtime.close());

function get(who: 'alice' | 'bob', path: string, headers: Record<string, string> = {}) {
  return app.request(path, { headers: { authorization: `Bearer ${who}`, ...headers } });
}

/** A client-driven run of alice's whose log holds run_started and one event per steer (`steers`). */
async function runWithEvents(steers: number): Promise<RunRecord> {
  const created = await app.request('/runs', {
    method: 'POST',
    headers: { authorization: 'Bearer alice', 'content-type': 'application/json' },
    body: JSON.stringify({ subject: uniqueSubject(ALICE), reducer: null, input: 'go' }),
  });
  expect(created.status).toBe(201);
  const { run } = (await created.json()) as { run: RunRecord };
  for (let i = 0; i < steers; i += 1) {
    const steer = await app.request(`/runs/${run.run_id}/controls`, {
      method: 'POST',
      headers: { authorization: 'Bearer alice', 'content-type': 'application/json' },
      body: JSON.stringify({ control_id: `s-${i}`, command: 'steer', input: `steer ${i}` }),
    });
    expect(steer.status).toBe(200);
  }
  const read = await get('alice', `/runs/${run.run_id}`);
  return (await read.json()) as RunRecord;
}

/** The seqs of an SSE body's `run_event`s, in order. */
const sseSeqs = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

describe('a cursor beyond the log head', () => {
  it('is refused 409 cursor_ahead on the long poll and SSE, with or without a wait; bob gets the 404 of an unknown run', async () => {
    const run = await runWithEvents(2);
    const head = run.last_seq;
    expect(head).toBeGreaterThanOrEqual(3);
    const id = run.run_id;
    const ahead = [
      [`/runs/${id}/events?after=${head + 1}`, {}],
      [`/runs/${id}/events?after=${head + 7}&wait=2`, {}],
      [`/runs/${id}/events/stream?after=${head + 1}&wait=0`, {}],
      [`/runs/${id}/events/stream?wait=2`, { 'last-event-id': String(head + 3) }],
    ] as const;
    for (const [path, headers] of ahead) {
      const refused = await get('alice', path, headers);
      expect(refused.status, path).toBe(409);
      expect(await refused.json()).toMatchObject({
        code: 'cursor_ahead',
        details: { run_id: id, last_seq: head },
      });
      const hidden = await get('bob', path, headers);
      const unknown = await get('bob', path.replace(id, 'run_unknown'), headers);
      expect(hidden.status, path).toBe(404);
      const hiddenBody = await hidden.text();
      expect(hiddenBody).not.toContain('last_seq');
      expect(hiddenBody).toBe((await unknown.text()).replaceAll('run_unknown', id));
    }
    // The head itself is a cursor it may wait at: nothing yet, not refused.
    const atHead = await get('alice', `/runs/${id}/events?after=${head}`);
    expect(atHead.status).toBe(200);
    expect(await atHead.json()).toMatchObject({ events: [], last_seq: head });
    const streamAtHead = await get('alice', `/runs/${id}/events/stream?after=${head}&wait=0`);
    expect(streamAtHead.status).toBe(200);
    expect(sseSeqs(await streamAtHead.text())).toEqual([]);
  });
});

describe('reconnecting from the last seq received', () => {
  it('gets each seq after the first cursor exactly once over SSE, the first after= kept in the URL', async () => {
    const run = await runWithEvents(5);
    const seen: number[] = [];
    let lastEventId: string | undefined;
    // Pages of two events, as cut connections would leave them; EventSource keeps the URL and sends Last-Event-ID.
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const response = await get(
        'alice',
        `/runs/${run.run_id}/events/stream?after=1&limit=2&wait=0`,
        lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
      );
      expect(response.status).toBe(200);
      const seqs = sseSeqs(await response.text());
      if (seqs.length === 0) break;
      seen.push(...seqs);
      lastEventId = String(seqs[seqs.length - 1]);
    }
    const expected = Array.from({ length: run.last_seq - 1 }, (_, i) => i + 2);
    expect(seen).toEqual(expected);
  });

  it('gets each seq after the first cursor exactly once over the long poll, following next_after', async () => {
    const run = await runWithEvents(5);
    const seen: number[] = [];
    let after = 2;
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const response = await get('alice', `/runs/${run.run_id}/events?after=${after}&limit=2`);
      const page = (await response.json()) as { events: { seq: number }[]; next_after: number };
      if (page.events.length === 0) break;
      seen.push(...page.events.map((e) => e.seq));
      after = page.next_after;
    }
    expect(seen).toEqual(Array.from({ length: run.last_seq - 2 }, (_, i) => i + 3));
  });
});
