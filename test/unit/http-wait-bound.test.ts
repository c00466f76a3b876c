/**
 * Bounded waiting: each caller holds at most AGENT_RUNS_MAX_OPEN_WAITS long
 * polls and event streams at once (per process); past it 429 too_many_waits with Retry-After and
 * nothing read; a wait that ends, however (answer, abort, error), frees its slot; a client that
 * goes away ends the store polling, over the HTTP app itself and through the local gateway
 * (whose Lambda-shaped handler gets the client's abort). The HTTP app on the memory engine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { followRun } from '../../console/src/live/run-feed.ts';
import { createMemoryBlobStore } from '../../lib/blobs/memory-blob-store.ts';
import { ApiError } from '../../lib/client/errors.ts';
import { createClient } from '../../lib/client/index.ts';
import { followSse } from '../../lib/client/live.ts';
import type { RunRecord } from '../../lib/contracts/index.ts';
import type { RunStore } from '../../lib/engine/ports.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import { createWaitSlots, maxOpenWaitsFromEnv } from '../../lib/http/wait-slots.ts';
import { type Gateway, startGateway } from '../../lib/local/gateway.ts';
import { withJwtAuthorizer } from '../../lib/local/identity.ts';
import { type LocalIssuer, loadOrCreateIssuer } from '../../lib/local/issuer.ts';
import { controlHandler } from '../../lib/local/stack-parts.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';
import { createMemoryRunStore } from '../../lib/store/memory-run-store.ts';
import { inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { type MemoryTestEngine, makeMemoryTestEngine } from '../support/memory-engine.ts';

const ALICE = { kind: 'user' as const, id: 'alice' };
const BOB = { kind: 'user' as const, id: 'bob' };

/** The memory store, whose getRun counts its reads per run and throws past the count `failing` sets for a run. */
function countingStore() {
  const inner = createMemoryRunStore({ blobs: createMemoryBlobStore() });
  const reads = new Map<string, number>();
  const failing = new Map<string, number>();
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      if (name === 'getRun') {
        return async (runId: string) => {
          const n = (reads.get(runId) ?? 0) + 1;
          reads.set(runId, n);
          if (n > (failing.get(runId) ?? Number.POSITIVE_INFINITY))
            throw new Error('the store broke mid-wait');
          return target.getRun(runId);
        };
      }
      return Reflect.get(target, name, receiver);
    },
  }) as RunStore;
  return { store, reads, failing };
}

let t: MemoryTestEngine;
let parts: ReturnType<typeof countingStore>;
let app: HttpApp;
let aliceRun: RunRecord;
let bobRun: RunRecord;
const pending: { abort: AbortController; response: Promise<unknown> }[] = [];

beforeAll(async () => {
  parts = countingStore();
  t = await makeMemoryTestEngine({
    store: parts.store,
    reducers: inProcessReducers({}),
    tools: inProcessTools({}),
    models: scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' })),
  });
  app = createHttpApp({
    engine: t.engine,
    functions: new InMemoryFunctionRegistry([]),
    tools: { list: () => [] },
    auth: anyOf(
      bearerTokenAuth('alice', ALICE, { admin: false }),
      bearerTokenAuth('bob', BOB, { admin: false }),
    ),
    maxOpenWaits: 2,
    pollIntervalMs: 20,
    log: () => {},
  });
  ({ run: aliceRun } = await t.engine.createRun(
    { subject: uniqueSubject(), input: 'a' },
    { principal: ALICE },
  ));
  ({ run: bobRun } = await t.engine.createRun(
    { subject: uniqueSubject('bob'), input: 'b' },
    { principal: BOB },
  ));
});

// Every wait a test left open ends (and frees its slot) before the next test.
afterEach(async () => {
  const open = pending.splice(0);
  for (const p of open) p.abort.abort();
  await Promise.all(open.map((p) => p.response.catch(() => undefined)));
});

/** A request of `who`, aborted by the returned controller (and at the end of the test). */
function get(who: 'alice' | 'bob', path: string): { response: Promise<Response>; abort: AbortController } {
  const abort = new AbortController();
  const response = Promise.resolve(
    app.request(path, { headers: { authorization: `Bearer ${who}` }, signal: abort.signal }),
  );
  pending.push({ abort, response });
  return { response, abort };
}

const longPoll = (who: 'alice' | 'bob', run: RunRecord, wait = 20) =>
  get(who, `/runs/${run.run_id}/events?after=${run.last_seq}&wait=${wait}`);

/** Resolves once `check` is true (polled every 10 ms), failing after `ms`. */
async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Waits until the run's record has been re-read at least `n` more times: the polls are waiting. */
async function polled(runId: string, more: number): Promise<void> {
  const from = parts.reads.get(runId) ?? 0;
  await until(() => (parts.reads.get(runId) ?? 0) >= from + more);
}

/** A promise that settles to 'pending' if `p` has not settled yet. */
const stateOf = (p: Promise<unknown>) =>
  Promise.race([p.then(() => 'settled'), new Promise((r) => setTimeout(() => r('pending'), 50))]);

describe('bounded waiting', () => {
  it('refuses a third long poll of one caller with 429 too_many_waits and Retry-After, reading nothing; another caller is not affected', async () => {
    const first = longPoll('alice', aliceRun);
    const second = longPoll('alice', aliceRun);
    await polled(aliceRun.run_id, 4);

    const third = await longPoll('alice', aliceRun).response;
    expect(third.status).toBe(429);
    const retryAfter = Number(third.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect(await third.json()).toMatchObject({
      code: 'too_many_waits',
      details: { max_open_waits: 2, retry_after_s: retryAfter },
    });
    // The event stream counts against the same bound.
    const stream = await get('alice', `/runs/${aliceRun.run_id}/events/stream?after=${aliceRun.last_seq}`)
      .response;
    expect(stream.status).toBe(429);
    expect(await stream.json()).toMatchObject({ code: 'too_many_waits' });
    // A read that does not wait takes no slot.
    const now = await get('alice', `/runs/${aliceRun.run_id}/events?after=0`).response;
    expect(now.status).toBe(200);
    // Refused before anything is looked up: an unknown run is 429 too, not 404.
    expect(
      (await longPoll('alice', { run_id: 'run_unknown', last_seq: 0 } as RunRecord).response).status,
    ).toBe(429);

    const bobs = [longPoll('bob', bobRun), longPoll('bob', bobRun)];
    await polled(bobRun.run_id, 4);
    for (const b of bobs) expect(await stateOf(b.response)).toBe('pending');
    expect(await stateOf(first.response)).toBe('pending');
    expect(await stateOf(second.response)).toBe('pending');
  });

  it('frees the slot of an aborted wait: a new one is accepted, and the aborted one stops polling', async () => {
    const { run: own } = await t.engine.createRun(
      { subject: uniqueSubject(), input: 'o' },
      { principal: ALICE },
    );
    const first = longPoll('alice', own);
    longPoll('alice', aliceRun);
    await polled(own.run_id, 2);
    await polled(aliceRun.run_id, 2);
    expect((await longPoll('alice', aliceRun).response).status).toBe(429);

    first.abort.abort();
    expect((await first.response).status).toBe(200);
    // The aborted poll re-reads its run no more (the poll interval is 20 ms).
    const reads = parts.reads.get(own.run_id);
    await new Promise((r) => setTimeout(r, 200));
    expect(parts.reads.get(own.run_id)).toBe(reads);
    // The slot is free once the aborted wait has ended (at once: the abort ends its pause). A
    // wait that is still pending after 100 ms was accepted; a 429 is retried.
    let accepted: ReturnType<typeof longPoll> | undefined;
    for (const end = Date.now() + 5_000; accepted === undefined && Date.now() < end; ) {
      const next = longPoll('alice', aliceRun, 1);
      const state = await Promise.race([
        next.response.then((r) => (r as Response).status),
        new Promise((r) => setTimeout(() => r('waiting'), 100)),
      ]);
      if (state === 'waiting') accepted = next;
      else await new Promise((r) => setTimeout(r, 20));
    }
    expect(accepted).toBeDefined();
    const answer = await accepted?.response;
    expect(answer?.status).toBe(200);
    expect(await answer?.json()).toMatchObject({ events: [], next_after: aliceRun.last_seq });
  });

  it('frees the slot of a wait that throws', async () => {
    const { run } = await t.engine.createRun({ subject: uniqueSubject(), input: 'x' }, { principal: ALICE });
    // Its first read (the access check) answers; the next (the first re-read while waiting) throws.
    parts.failing.set(run.run_id, (parts.reads.get(run.run_id) ?? 0) + 1);
    const broken = longPoll('alice', run);
    const held = longPoll('alice', aliceRun);
    const failed = await broken.response;
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ code: 'internal' });
    // Its slot is free: another wait is accepted beside the one still held.
    const next = longPoll('alice', aliceRun, 0.3);
    const answer = await next.response;
    expect(answer.status).toBe(200);
    expect(await stateOf(held.response)).toBe('pending');
  });
});

describe('on Lambda, where the function never learns that a client left', () => {
  it("ends a long poll and a stream 1 s before the invocation's time runs out, whatever the wait asked", async () => {
    // hono's Lambda adapter passes the invocation's context as env.lambdaContext.
    const env = (ms: number) => {
      const end = Date.now() + ms;
      return { lambdaContext: { getRemainingTimeInMillis: () => end - Date.now() } };
    };
    const headers = { authorization: 'Bearer bob' };
    for (const path of [
      `/runs/${bobRun.run_id}/events?after=${bobRun.last_seq}&wait=20`,
      `/runs/${bobRun.run_id}/events/stream?after=${bobRun.last_seq}&wait=20`,
    ]) {
      const started = Date.now();
      const response = await app.fetch(new Request(`http://api.test${path}`, { headers }), env(1_600));
      const took = Date.now() - started;
      expect(response.status).toBe(200);
      expect(took).toBeGreaterThanOrEqual(400);
      expect(took).toBeLessThan(1_600);
    }
  });
});

describe('the client library and too_many_waits', () => {
  it('calls a 429 with Retry-After retryable, and followEvents waits it out and goes on', async () => {
    const client = createClient({
      baseUrl: 'http://api.test',
      token: 'alice',
      fetch: (req) => app.fetch(req),
      // The refusal itself is what this test reads: no retry inside the call.
      retry: { attempts: 1 },
    });
    // Two waits of 1 s hold alice's slots: Retry-After is then 1.
    longPoll('alice', aliceRun, 1);
    longPoll('alice', aliceRun, 1);
    await polled(aliceRun.run_id, 4);
    const refused = await client
      .events(aliceRun.run_id, { after: aliceRun.last_seq, wait: 5 })
      .catch((e) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({
      code: 'too_many_waits',
      status: 429,
      retryAfterSeconds: 1,
      retryable: true,
    });

    longPoll('alice', aliceRun, 1);
    longPoll('alice', aliceRun, 1);
    await polled(aliceRun.run_id, 4);
    const abort = new AbortController();
    const started = Date.now();
    for await (const event of client.followEvents(aliceRun.run_id, { after: 0, signal: abort.signal })) {
      expect(event.seq).toBe(1);
      break;
    }
    // The first poll was refused, the second (after Retry-After: 1 s) answered.
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("the console's feed retries a too_many_waits no sooner than its Retry-After", async () => {
    // Two waits of 5 s hold alice's slots: Retry-After is then about 5.
    longPoll('alice', aliceRun, 5);
    longPoll('alice', aliceRun, 5);
    await polled(aliceRun.run_id, 4);
    const abort = new AbortController();
    const errors: { error: unknown; retryInMs: number | null }[] = [];
    const pages: number[] = [];
    await followRun(
      aliceRun.run_id,
      {
        baseUrl: 'http://api.test',
        token: 'alice',
        after: 0,
        signal: abort.signal,
        fetch: async (r) => app.fetch(r),
      },
      {
        onEvents: () => {},
        onPage: (page) => pages.push(page.next_after),
        onError: (error, retryInMs) => {
          errors.push({ error, retryInMs });
          abort.abort();
        },
      },
    );
    // The first page (wait=0) took no slot; the next (wait=20) was refused.
    expect(pages).toHaveLength(1);
    expect(errors[0]?.error).toMatchObject({ code: 'too_many_waits' });
    expect(errors[0]?.retryInMs).toBeGreaterThanOrEqual(4_000);
  });

  it('followSse waits a too_many_waits out and goes on', async () => {
    longPoll('alice', aliceRun, 1);
    longPoll('alice', aliceRun, 1);
    await polled(aliceRun.run_id, 4);
    const statuses: number[] = [];
    const target = {
      baseUrl: 'http://api.test',
      token: 'alice',
      fetch: async (r: Request) => {
        const response = await app.fetch(r);
        statuses.push(response.status);
        return response;
      },
    };
    for await (const event of followSse(target, aliceRun.run_id, { after: 0, wait: 1 })) {
      expect(event.seq).toBe(1);
      break;
    }
    expect(statuses[0]).toBe(429);
    expect(statuses.at(-1)).toBe(200);
  });

  it('calls every 429 and 503 retryable, with or without Retry-After, and a 409 not', () => {
    expect(new ApiError('quota_exceeded', 429, 'no').retryable).toBe(true);
    expect(new ApiError('quota_exceeded', 429, 'no', {}, { retryAfterSeconds: 30 }).retryable).toBe(true);
    expect(new ApiError('store_unavailable', 503, 'down').retryable).toBe(true);
    expect(new ApiError('run_terminal', 409, 'ended').retryable).toBe(false);
  });
});

describe('the local gateway ends a long poll when its client goes away', () => {
  let dir: string;
  let issuer: LocalIssuer;
  let gateway: Gateway;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'wait-bound-'));
    issuer = await loadOrCreateIssuer(dir);
    vi.stubEnv('AGENT_RUNS_MAX_OPEN_WAITS', '1');
    const runtime = {
      engine: t.engine,
      functions: new InMemoryFunctionRegistry([]),
      tools: { list: () => [] },
    };
    const handler = controlHandler(runtime as unknown as Runtime, () => {}, undefined);
    vi.unstubAllEnvs();
    gateway = await startGateway({ handler: withJwtAuthorizer(issuer, handler), port: 0 });
  });

  afterAll(async () => {
    await gateway.stop(100);
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops polling the store once the client aborted, and frees its slot for the next wait', async () => {
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject('bob'), input: 'g' },
      { principal: BOB },
    );
    const token = await issuer.sign({ sub: 'bob' });
    const headers = { authorization: `Bearer ${token}` };
    const url = `${gateway.url}/runs/${run.run_id}/events?after=${run.last_seq}&wait=20`;
    const abort = new AbortController();
    const first = fetch(url, { headers, signal: abort.signal }).catch((err: unknown) => err);
    await polled(run.run_id, 2);
    // The bound (1, from AGENT_RUNS_MAX_OPEN_WAITS) is held by the first poll.
    const refused = await fetch(url, { headers });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);

    abort.abort();
    expect(await first).toBeInstanceOf(Error);
    // The store polling ends (the local poll interval is 250 ms: a few at most after the abort).
    await new Promise((r) => setTimeout(r, 400));
    const after = parts.reads.get(run.run_id) ?? 0;
    await new Promise((r) => setTimeout(r, 1_000));
    expect(parts.reads.get(run.run_id) ?? 0).toBe(after);

    // Its slot is free: the next wait is accepted and answers at the end of its wait.
    const next = await fetch(`${gateway.url}/runs/${run.run_id}/events?after=${run.last_seq}&wait=0.3`, {
      headers,
    });
    expect(next.status).toBe(200);
  });
});

describe('AGENT_RUNS_MAX_OPEN_WAITS and the slot count', () => {
  it('defaults to 8, takes a positive integer and names the variable otherwise', () => {
    expect(maxOpenWaitsFromEnv({})).toBe(32);
    expect(maxOpenWaitsFromEnv({ AGENT_RUNS_MAX_OPEN_WAITS: '' })).toBe(32);
    expect(maxOpenWaitsFromEnv({ AGENT_RUNS_MAX_OPEN_WAITS: '3' })).toBe(3);
    for (const bad of ['0', '-1', '2.5', 'many'])
      expect(() => maxOpenWaitsFromEnv({ AGENT_RUNS_MAX_OPEN_WAITS: bad })).toThrow(
        /AGENT_RUNS_MAX_OPEN_WAITS/,
      );
  });

  it('computes Retry-After from the earliest open wait and frees a slot once only', () => {
    let now = 1_000_000;
    const slots = createWaitSlots(2, () => now);
    const a = slots.acquire('user:alice', now + 12_500);
    slots.acquire('user:alice', now + 3_200);
    expect(() => slots.acquire('user:alice', now + 20_000)).toThrow(
      expect.objectContaining({ code: 'too_many_waits', headers: { 'Retry-After': '4' } }),
    );
    now += 10_000; // the earliest deadline passed (its wait is still open): at least 1 s.
    expect(() => slots.acquire('user:alice', now)).toThrow(
      expect.objectContaining({ details: { max_open_waits: 2, retry_after_s: 1 } }),
    );
    slots.acquire('user:bob', now + 1_000);
    a();
    a();
    expect(slots.held('user:alice')).toBe(1);
    slots.acquire('user:alice', now + 1_000);
    expect(slots.held('user:alice')).toBe(2);
    expect(slots.held('user:bob')).toBe(1);
  });
});
