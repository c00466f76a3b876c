/**
 * No oracles in listings and refusals, through the HTTP API on DynamoDB Local and fauxqs, with
 * the users alice and bob (and mallory and dave, whose runs pad the listings), the agent
 * `planner` acting for alice, an admin and a system caller, on a table of this file's own (so
 * every run listed and every request counted is this file's): bob pages runs by status and meets
 * only his own, under cursors that show nothing of alice's runs and are his alone; what his
 * listing costs the store and what it answers are the same whether others have no runs of that
 * status or many, since it reads only his own runs; a subject
 * lookup in a workspace bob may not use reads nothing of the subject; and the refusal of an
 * agent or a workspace costs the registry the same reads whether or not the name exists for
 * someone else. docs/guides/who-may-do-what.md states these rules.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import type { Principal } from '../../lib/contracts/index.ts';
import { MAX_STORE_PAGES } from '../../lib/engine/list-cursor.ts';
import type { RegistryStore } from '../../lib/engine/ports.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { createTableInput } from '../../lib/store/table.ts';
import { inProcessReducers } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { askOnce } from '../support/reducers.ts';

const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: 'alice' },
  bob: { kind: 'user', id: 'bob' },
  mallory: { kind: 'user', id: 'mallory' },
  dave: { kind: 'user', id: 'dave' },
  planner: { kind: 'agent', id: 'planner', on_behalf_of: 'alice' },
  admin: { kind: 'user', id: 'root' },
  ops: { kind: 'system', id: 'ops' },
};
type Who = keyof typeof PRINCIPALS;

const local = inject('localServices');
const clients = createAwsClients(local);
const tableName = `tenancy-listings-${randomUUID()}`;
let runtime: Runtime;
let app: HttpApp;
/** Every registry request the runtime makes, by method, since the test started counting. */
const registryCalls: Record<string, number> = {};

/** Counts each call of the registry store's reads (the object the engine reads through). */
function countRegistryReads(registries: RegistryStore): void {
  for (const method of ['head', 'snapshot', 'entry', 'versions'] as const) {
    const target = registries as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const read = (target[method] as (...args: unknown[]) => Promise<unknown>).bind(registries);
    target[method] = (...args: unknown[]) => {
      registryCalls[method] = (registryCalls[method] ?? 0) + 1;
      return read(...args);
    };
  }
}

beforeAll(async () => {
  await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName)));
  ({ runtime } = await localRuntime('tenancy-listings', {
    tableName,
    reducers: inProcessReducers({ '/r/ask': askOnce() }),
  }));
  countRegistryReads(runtime.registries);
  const auth = Object.keys(PRINCIPALS).map((who) =>
    bearerTokenAuth(`tok-${who}`, PRINCIPALS[who], { admin: who === 'admin' }),
  );
  app = createHttpApp({ ...runtime, auth: anyOf(...auth), pollIntervalMs: 50, log: () => {} });
});

afterAll(async () => {
  runtime.close();
  await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
  clients.destroy();
});

interface Answer {
  status: number;
  text: string;
}

async function call(who: Who, method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer tok-${who}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, text: await response.text() };
}

/** Creates a queued run (no worker runs here, so it stays queued) and returns its id. */
async function create(who: Who, workspace: string, path = `/p/${randomUUID()}`): Promise<string> {
  const created = await call(who, 'POST', '/runs', {
    subject: { workspace, path },
    reducer: { function_path: '/r/ask' },
    input: 'secret input',
  });
  expect(created.status, created.text).toBe(201);
  return (JSON.parse(created.text) as { run: { run_id: string } }).run.run_id;
}

interface Page {
  runs: { run_id: string }[];
  cursor?: string;
}

/** The run store's request counts now. */
const storeCount = () => ({ reads: runtime.store.metrics.reads, queries: runtime.store.metrics.queries });

/**
 * Every page of `GET /runs?status=&limit=` as `who`, following the cursor to the end, with the
 * store requests each page made.
 */
async function pages(
  who: Who,
  limit: number,
  status = 'queued',
): Promise<{ pages: Page[]; texts: string[]; costs: { reads: number; queries: number }[] }> {
  const out: Page[] = [];
  const texts: string[] = [];
  const costs: { reads: number; queries: number }[] = [];
  let cursor: string | undefined;
  do {
    const q = `/runs?status=${status}&limit=${limit}${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const before = storeCount();
    const answer = await call(who, 'GET', q);
    const after = storeCount();
    costs.push({ reads: after.reads - before.reads, queries: after.queries - before.queries });
    expect(answer.status, answer.text).toBe(200);
    const page = JSON.parse(answer.text) as Page;
    out.push(page);
    texts.push(answer.text);
    cursor = page.cursor;
    expect(out.length).toBeLessThan(100);
  } while (cursor !== undefined);
  return { pages: out, texts, costs };
}

/** What a cursor shows when decoded as the store's own (base64url of JSON): nothing readable. */
function expectOpaque(cursor: string, hidden: string[]): void {
  const decoded = Buffer.from(cursor, 'base64url').toString('latin1');
  for (const id of hidden) expect(decoded).not.toContain(id);
  expect(decoded).not.toContain('created_at');
  expect(decoded).not.toContain('run_');
  expect(() => JSON.parse(Buffer.from(cursor, 'base64url').toString())).toThrow();
}

const ids = (ps: Page[]) => ps.flatMap((p) => p.runs.map((r) => r.run_id));

describe('listing runs by status', () => {
  it("pages bob through his runs only, under cursors that show nothing of alice's runs and are his alone", async () => {
    const alices: string[] = [];
    const bobs: string[] = [];
    alices.push(await create('alice', 'user:alice'));
    bobs.push(await create('bob', 'user:bob'));
    alices.push(await create('alice', 'user:alice'));
    alices.push(await create('planner', 'user:alice'));
    bobs.push(await create('bob', 'user:bob'));
    alices.push(await create('alice', 'user:alice'));

    const bob = await pages('bob', 1);
    expect(ids(bob.pages)).toEqual([...bobs].reverse());
    // Every page but the last is full: an empty page never stands for runs passed over.
    for (const p of bob.pages.slice(0, -1)) expect(p.runs).toHaveLength(1);
    for (const text of bob.texts) for (const id of alices) expect(text).not.toContain(id);
    const cursors = bob.pages.flatMap((p) => (p.cursor === undefined ? [] : [p.cursor]));
    expect(cursors.length).toBeGreaterThan(0);
    for (const c of cursors) expectOpaque(c, alices);

    // Alice pages hers and her agent its own (a listing reads the caller's own principal's runs:
    // the agent's run is still hers to read by id), and bob's cursor is not hers to follow.
    const alice = await pages('alice', 2);
    const planners = [alices[2] as string];
    expect(new Set(ids(alice.pages))).toEqual(new Set(alices.filter((id) => !planners.includes(id))));
    for (const text of alice.texts) for (const id of bobs) expect(text).not.toContain(id);
    expect(ids((await pages('planner', 2)).pages)).toEqual(planners);
    expect((await call('alice', 'GET', `/runs/${planners[0]}`)).status).toBe(200);
    const first = cursors[0] as string;
    for (const who of ['alice', 'planner', 'admin', 'ops'] as const) {
      const stolen = await call(who, 'GET', `/runs?status=queued&limit=1&cursor=${first}`);
      expect(stolen.status, who).toBe(400);
      expect(JSON.parse(stolen.text)).toMatchObject({
        code: 'validation_failed',
        details: { issues: [{ path: 'cursor', code: 'invalid_cursor' }] },
      });
    }
    // Nor for another status, nor altered, nor a position written the way the store writes it.
    const otherStatus = await call('bob', 'GET', `/runs?status=running&limit=1&cursor=${first}`);
    expect(otherStatus.status).toBe(400);
    const flipped = `${first.slice(0, 20)}${first[20] === 'A' ? 'B' : 'A'}${first.slice(21)}`;
    expect((await call('bob', 'GET', `/runs?status=queued&limit=1&cursor=${flipped}`)).status).toBe(400);
    const forged = Buffer.from(JSON.stringify({ created_at: Date.now(), run_id: alices[0] })).toString(
      'base64url',
    );
    expect((await call('bob', 'GET', `/runs?status=queued&limit=1&cursor=${forged}`)).status).toBe(400);
    // Bob's own cursor still serves him.
    const again = await call('bob', 'GET', `/runs?status=queued&limit=1&cursor=${first}`);
    expect(again.status, again.text).toBe(200);
    expect(ids([JSON.parse(again.text) as Page])).toEqual([bobs[0]]);
  });

  it('costs bob the same store requests and answers him the same whether others have 0 or 30 runs of the status', async () => {
    // Bob's runs: two left queued, three stepped to waiting (the reducer asks the user).
    const bobQueued = [await create('bob', 'user:bob'), await create('bob', 'user:bob')];
    const bobWaiting: string[] = [];
    for (let i = 0; i < 3; i += 1) bobWaiting.push(await toWaiting(await create('bob', 'user:bob')));

    /** Bob's listings of each status at several page sizes: the answers (each cursor's bytes aside) and their costs. */
    const bobListings = async () => {
      const seen: { status: string; limit: number; texts: string[]; costs: unknown[]; lengths: number[] }[] =
        [];
      for (const status of ['queued', 'waiting', 'running']) {
        for (const limit of [1, 2, 100]) {
          const listed = await pages('bob', limit, status);
          const cursors = listed.pages.flatMap((p) => (p.cursor === undefined ? [] : [p.cursor]));
          seen.push({
            status,
            limit,
            // A cursor is sealed under a fresh IV each time: its presence and length are what it shows.
            texts: listed.texts.map((t) => t.replace(/"cursor":"[^"]*"/, '"cursor":"(sealed)"')),
            costs: listed.costs,
            lengths: cursors.map((c) => c.length),
          });
        }
      }
      return seen;
    };
    await pages('bob', 1); // the listing key is read once per process: not part of what is compared
    const alone = await bobListings();

    // Alice has no waiting run yet; now she, mallory and dave (and alice's agent) add 32 runs, half waiting.
    const hidden: string[] = [];
    for (const who of ['alice', 'mallory', 'dave'] as const) {
      for (let i = 0; i < 10; i += 1) {
        const id = await create(who, `user:${who === 'dave' || who === 'mallory' ? who : 'alice'}`);
        hidden.push(i % 2 === 0 ? await toWaiting(id) : id);
      }
    }
    hidden.push(
      await toWaiting(await create('planner', 'user:alice')),
      await create('planner', 'user:alice'),
    );

    const crowded = await bobListings();
    expect(crowded).toEqual(alone);
    // The hidden runs are there: alice lists her five waiting ones (her agent's are its own).
    expect(ids((await pages('alice', 100, 'waiting')).pages)).toHaveLength(5);
    for (const listing of crowded)
      for (const text of listing.texts) for (const id of hidden) expect(text).not.toContain(id);
    // Every cursor has one length, whatever follows it.
    expect(new Set(crowded.flatMap((l) => l.lengths)).size).toBe(1);

    // Bob still lists every run of his of each status, newest first, across pages.
    const newestFirst = async (runIds: string[]) => {
      const records = await Promise.all(runIds.map((id) => runtime.store.getRun(id)));
      return records
        .map((r) => ({ run_id: r?.run_id as string, created_at: r?.created_at as number }))
        .sort((a, b) => b.created_at - a.created_at || (a.run_id < b.run_id ? 1 : -1))
        .map((r) => r.run_id);
    };
    for (const limit of [1, 2, 100]) {
      const waiting = await pages('bob', limit, 'waiting');
      expect(ids(waiting.pages)).toEqual(await newestFirst(bobWaiting));
      const queued = ids((await pages('bob', limit)).pages);
      // Earlier tests of this file left bob queued runs too: his listing holds them all, in order.
      expect(queued.filter((id) => bobQueued.includes(id))).toEqual(await newestFirst(bobQueued));
      expect(queued).toEqual(await newestFirst(queued));
      expect(new Set(queued).size).toBe(queued.length);
      for (const id of [...bobWaiting, ...hidden]) expect(queued).not.toContain(id);
      expect(ids((await pages('bob', limit, 'running')).pages)).toEqual([]);
    }
  });

  it("answers bob's one-run page alike whether alice has a queued run, with a sybil padding 8 hidden runs", async () => {
    const sybil: string[] = [];
    for (let i = 0; i < MAX_STORE_PAGES; i += 1) sybil.push(await create('mallory', 'user:mallory'));
    // Bob's one-run pages of queued runs (each cursor's bytes aside), and what each cost the store.
    const look = async () => {
      const listed = await pages('bob', 1);
      return {
        texts: listed.texts.map((t) => t.replace(/"cursor":"[^"]*"/, '"cursor":"(sealed)"')),
        costs: listed.costs,
      };
    };
    const without = await look();
    const alices = await create('alice', 'user:alice');
    const withAlices = await look();
    expect(withAlices).toEqual(without);
    // Every page but the last holds one of his runs: none stands for runs passed over.
    expect(without.texts.slice(0, -1).every((t) => t.startsWith('{"runs":[{'))).toBe(true);
    for (const text of [...without.texts, ...withAlices.texts]) {
      for (const id of [...sybil, alices]) expect(text).not.toContain(id);
    }
  });
});

/** Steps a queued run once: the reducer asks the user, and the run waits. Returns its id. */
async function toWaiting(runId: string): Promise<string> {
  await runtime.engine.stepRun(runId);
  expect((await runtime.store.getRun(runId))?.status).toBe('waiting');
  return runId;
}

describe('a subject lookup', () => {
  it('reads nothing of a subject in a workspace the caller may not use, and answers no run', async () => {
    const path = `/daily/${randomUUID()}`;
    const runId = await create('alice', 'user:alice', path);
    const secret = `secret-project-${randomUUID()}`;
    const granted = await call('admin', 'POST', '/admin/workspaces', { workspace: secret, users: ['alice'] });
    expect(granted.status, granted.text).toBe(201);
    const shared = await create('alice', secret, path);
    const lookup = (who: Who, ws: string) =>
      call(
        who,
        'GET',
        `/runs?subject_workspace=${encodeURIComponent(ws)}&subject_path=${encodeURIComponent(path)}`,
      );

    for (const ws of ['user:alice', secret, `no-such-ws-${randomUUID()}`]) {
      const before = storeCount();
      const answer = await lookup('bob', ws);
      expect(answer).toEqual({ status: 200, text: '{"runs":[]}' });
      expect(storeCount(), ws).toEqual(before);
    }
    // Alice looks in her workspaces: the subject is read, and her runs are there.
    for (const [ws, id] of [
      ['user:alice', runId],
      [secret, shared],
    ] as const) {
      const before = storeCount();
      const answer = await lookup('alice', ws);
      expect(ids([JSON.parse(answer.text) as Page])).toEqual([id]);
      expect(storeCount().reads).toBeGreaterThan(before.reads);
    }
    // Bob may look in his own workspace (nothing there at this path).
    const before = storeCount();
    expect((await lookup('bob', 'user:bob')).text).toBe('{"runs":[]}');
    expect(storeCount().reads).toBeGreaterThan(before.reads);
  });
});

/** `send`'s answer and the registry and store requests it made. */
async function counted(send: () => Promise<Answer>) {
  const registryBefore = { ...registryCalls };
  const storeBefore = storeCount();
  const answer = await send();
  const registry = Object.fromEntries(
    Object.keys({ ...registryCalls }).map((m) => [m, (registryCalls[m] ?? 0) - (registryBefore[m] ?? 0)]),
  );
  const after = storeCount();
  return {
    answer,
    registry,
    store: { reads: after.reads - storeBefore.reads, queries: after.queries - storeBefore.queries },
  };
}

describe('refusals cost the registry the same reads', () => {
  it('for as_agent naming an agent acting for alice and one nobody registered', async () => {
    const agent = `functions:/agents/alices-${randomUUID()}`;
    const published = await call('admin', 'POST', '/admin/agents', {
      agent_id: agent,
      acts_for: { users: ['alice'] },
      tools: [],
    });
    expect(published.status, published.text).toBe(201);
    const unknown = `functions:/agents/nobody-${randomUUID()}`;
    const asAgent = (name: string) => () =>
      call('bob', 'POST', '/runs', {
        subject: { workspace: 'user:bob', path: `/p/${randomUUID()}` },
        reducer: { function_path: '/r/ask' },
        input: 'x',
        as_agent: name,
      });
    const registered = await counted(asAgent(agent));
    const unregistered = await counted(asAgent(unknown));
    expect(registered.answer.status).toBe(403);
    expect(JSON.parse(registered.answer.text)).toMatchObject({ code: 'agent_not_allowed' });
    expect(unregistered.answer.text.replaceAll(unknown, '{agent}')).toBe(
      registered.answer.text.replaceAll(agent, '{agent}'),
    );
    expect(registered.registry.entry).toBeGreaterThan(0);
    expect(unregistered.registry).toEqual(registered.registry);
    expect(unregistered.store).toEqual(registered.store);
  });

  it('for a create in a workspace granted to alice only and in one nobody was granted', async () => {
    const secret = `secret-project-${randomUUID()}`;
    const granted = await call('admin', 'POST', '/admin/workspaces', { workspace: secret, users: ['alice'] });
    expect(granted.status, granted.text).toBe(201);
    const nowhere = `no-such-ws-${randomUUID()}`;
    const createIn = (ws: string) => () =>
      call('bob', 'POST', '/runs', {
        subject: { workspace: ws, path: '/p/x' },
        reducer: { function_path: '/r/ask' },
        input: 'x',
      });
    const inSecret = await counted(createIn(secret));
    const inNowhere = await counted(createIn(nowhere));
    expect(inSecret.answer.status).toBe(403);
    expect(JSON.parse(inSecret.answer.text)).toMatchObject({ code: 'workspace_not_granted' });
    expect(inNowhere.answer.text.replaceAll(nowhere, '{ws}')).toBe(
      inSecret.answer.text.replaceAll(secret, '{ws}'),
    );
    expect(inSecret.registry.entry).toBeGreaterThan(0);
    expect(inNowhere.registry).toEqual(inSecret.registry);
    expect(inNowhere.store).toEqual(inSecret.store);
    // The same holds for a subject lookup there: the workspace check reads alike, the subject not at all.
    const lookIn = (ws: string) => () =>
      call('bob', 'GET', `/runs?subject_workspace=${ws}&subject_path=/p/x`);
    const lookSecret = await counted(lookIn(secret));
    const lookNowhere = await counted(lookIn(nowhere));
    expect(lookNowhere).toEqual(lookSecret);
    expect(lookSecret.store).toEqual({ reads: 0, queries: 0 });
  });
});
