/**
 * A resume key belongs to the principal whose run waits on it, through the HTTP API on DynamoDB
 * Local and fauxqs, with the users alice and bob and a system caller: bob's run cannot take a
 * key alice's run waits on or used (his client-driven outcome is 409 `resume_key_in_use` and
 * changes nothing; his tool's waiting result becomes a failed one), so her result still reaches
 * her run; and a client-driven wait on a key holding an early result takes it in the same commit
 * (it was a 500). docs/contracts/run-lifecycle.md, "Operations" (waiting with a resume_key).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Principal, type RunRecord, TOOL_RESULT_ENVELOPE } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { toolLoop } from '../support/reducers.ts';

const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: 'alice' },
  bob: { kind: 'user', id: 'bob' },
  ops: { kind: 'system', id: 'ops' },
};
type Who = keyof typeof PRINCIPALS;

/** The resume key each server-driven run's one tool call waits on, by run id. */
const keys = new Map<string, string>();
let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('resume-key-owner', {
    heartbeatMs: 100,
    reducers: inProcessReducers({ '/r/wait': toolLoop(1, 'wait_here') }),
    registerTools(registry) {
      registry.register({
        name: 'wait_here',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: async (_args, ctx) => ({
            envelope: TOOL_RESULT_ENVELOPE,
            status: 'waiting',
            resume_key: keys.get(ctx.run_id),
          }),
        },
        metadata: { mutating: false, replay_safe: true },
      });
    },
  }));
  const auth = Object.keys(PRINCIPALS).map((who) => bearerTokenAuth(`tok-${who}`, PRINCIPALS[who]));
  app = createHttpApp({ ...runtime, auth: anyOf(...auth), pollIntervalMs: 50, log: () => {} });
});

afterAll(() => runtime.close());

async function call(who: Who, method: string, path: string, body?: unknown) {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer tok-${who}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) as Record<string, unknown> };
}

/** A subject in the workspace of `who`. */
const own = (who: Who) => ({ workspace: `user:${PRINCIPALS[who]?.id}`, path: `/keys/${randomUUID()}` });

/** A server-driven run of `who` whose tool waits on `key`, stepped until it rests. */
async function waitingRun(who: Who, key: string): Promise<RunRecord> {
  const created = await call(who, 'POST', '/runs', {
    subject: own(who),
    reducer: { function_path: '/r/wait' },
    input: 'hello',
  });
  expect(created.status, created.text).toBe(201);
  const run = created.json.run as RunRecord;
  keys.set(run.run_id, key);
  await runtime.engine.stepRun(run.run_id);
  return (await runtime.store.getRun(run.run_id)) as RunRecord;
}

/** A client-driven run of `who` with a tool call in flight, and the outcome that parks it on `key`. */
async function clientToolCall(who: Who) {
  const created = await call(who, 'POST', '/runs', { subject: own(who), reducer: null, input: 'go' });
  expect(created.status, created.text).toBe(201);
  const runId = (created.json.run as RunRecord).run_id;
  const lease = await call(who, 'POST', `/runs/${runId}/lease`, { owner: 'w1' });
  const fence = { owner: 'w1', epoch: (lease.json.lease as { epoch: number }).epoch };
  const begun = await call(who, 'POST', `/runs/${runId}/operations`, {
    fence,
    kind: 'tool_call',
    replay_safe: true,
    request: { tool: 'echo', mutating: false },
  });
  expect(begun.status, begun.text).toBe(200);
  const opId = (begun.json.operation as { op_id: string }).op_id;
  const parkOn = (key: string) =>
    call(who, 'POST', `/runs/${runId}/operations/outcome`, {
      fence,
      op_id: opId,
      result: {
        kind: 'tool_result',
        envelope: { envelope: TOOL_RESULT_ENVELOPE, status: 'waiting', resume_key: key },
      },
    });
  return { runId, parkOn };
}

const succeeded = (text: string) => ({
  envelope: TOOL_RESULT_ENVELOPE,
  status: 'succeeded',
  payload: { text },
});

describe('a resume key belongs to the principal whose run waits on it', () => {
  it("refuses bob's client-driven wait on alice's key, changing nothing, and her result reaches her", async () => {
    const key = `shared:${randomUUID()}`;
    const hers = await waitingRun('alice', key);
    const bobs = await clientToolCall('bob');
    const before = await runtime.store.getRun(bobs.runId);

    const parked = await bobs.parkOn(key);
    const delivered = await call(
      'ops',
      'POST',
      `/results/${encodeURIComponent(key)}?delivery_id=s1`,
      succeeded('for alice'),
    );

    expect(parked.status, parked.text).toBe(409);
    expect(parked.json).toMatchObject({ code: 'resume_key_in_use', details: { resume_key: key } });
    const after = await runtime.store.getRun(bobs.runId);
    expect([after?.version, after?.last_seq, after?.status]).toEqual([
      before?.version,
      before?.last_seq,
      'running',
    ]);
    expect(delivered.status, delivered.text).toBe(200);
    const aliceNow = (await runtime.store.getRun(hers.run_id)) as RunRecord;
    expect(aliceNow.open_requests).toEqual([]);
    expect(aliceNow.last_seq).toBeGreaterThan(hers.last_seq);
  });

  it("fails bob's tool wait on a key alice used, and leaves her key hers", async () => {
    const key = `shared:${randomUUID()}`;
    const hers = await waitingRun('alice', key);
    const first = await call(
      'alice',
      'POST',
      `/results/${encodeURIComponent(key)}?delivery_id=d1`,
      succeeded('one'),
    );
    expect(first.status, first.text).toBe(200);

    const bobs = await waitingRun('bob', key);
    const repeat = await call(
      'ops',
      'POST',
      `/results/${encodeURIComponent(key)}?delivery_id=d1`,
      succeeded('one'),
    );

    // Bob's tool result is a failure naming the key; his run never waited on it.
    const events = await runtime.store.readEvents(bobs.run_id, 0, 100);
    const result = events.find((e) => e.kind === 'tool_result');
    expect(result?.data.envelope).toMatchObject({
      status: 'failed',
      diagnostics: [expect.objectContaining({ code: 'resume_key_in_use' })],
    });
    expect(bobs.open_requests).toEqual([]);
    // A repeat of alice's delivery is still her duplicate, not a result for bob.
    expect(repeat.json).toMatchObject({ ack: 'duplicate' });
    expect((await runtime.store.getRun(hers.run_id))?.open_requests).toEqual([]);
  });

  it('lets a client-driven wait take a result that arrived before it, in the same commit', async () => {
    const key = `early:${randomUUID()}`;
    const held = await call(
      'ops',
      'POST',
      `/results/${encodeURIComponent(key)}?delivery_id=e1`,
      succeeded('early'),
    );
    expect(held.status, held.text).toBe(202);
    const run = await clientToolCall('alice');

    const parked = await run.parkOn(key);

    expect(parked.status, parked.text).toBe(200);
    const events = await runtime.store.readEvents(run.runId, 0, 100);
    expect(events.map((e) => e.kind)).toEqual(
      expect.arrayContaining(['request_opened', 'result_delivered', 'tool_result']),
    );
    expect((await runtime.store.getRun(run.runId))?.open_requests).toEqual([]);
  });
});
