/**
 * Deliveries answered like controls, through the HTTP API on DynamoDB Local and fauxqs, with the
 * users alice and bob and a system caller: a delivery_id resent with another body is 409
 * `delivery_id_reused` (for an applied result and for one held before its wait), while bob, who
 * may not see the run, still learns nothing; an answer to a request already answered is
 * rejected `request_already_resolved`, an unknown request id `request_not_found`. A resume key
 * belongs to the principal whose run waits on it: bob's run cannot take a key alice's run waits
 * on or used (his client-driven outcome is 409 `resume_key_in_use` and changes nothing; his
 * tool's waiting result becomes a failed one), so her result still reaches her run; and a
 * client-driven wait on a key holding an early result takes it in the same commit (it was a 500).
 * docs/contracts/run-lifecycle.md, "Controls" (control_id_reused), "Operations".
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Principal, type RunRecord, TOOL_RESULT_ENVELOPE } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { askOnce, toolLoop } from '../support/reducers.ts';

const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: 'alice' },
  bob: { kind: 'user', id: 'bob' },
  ops: { kind: 'system', id: 'ops' },
};
type Who = keyof typeof PRINCIPALS;

/** The resume key each run's one tool call waits on, by run id. */
const keys = new Map<string, string>();
let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('deliveries-like-controls', {
    heartbeatMs: 100,
    reducers: inProcessReducers({ '/r/wait': toolLoop(1, 'wait_here'), '/r/ask': askOnce() }),
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

async function aliceCreates(functionPath: string, key?: string): Promise<RunRecord> {
  const created = await call('alice', 'POST', '/runs', {
    subject: uniqueSubject(),
    reducer: { function_path: functionPath },
    input: 'hello',
  });
  expect(created.status, created.text).toBe(201);
  const run = created.json.run as RunRecord;
  if (key !== undefined) keys.set(run.run_id, key);
  await runtime.engine.stepRun(run.run_id);
  return (await runtime.store.getRun(run.run_id)) as RunRecord;
}

const succeeded = (text: string) => ({
  envelope: TOOL_RESULT_ENVELOPE,
  status: 'succeeded',
  payload: { text },
});

describe('a delivery_id is bound to its body', () => {
  it('answers a resent delivery_id duplicate with its body and 409 delivery_id_reused with another', async () => {
    // Prepare: alice's run waits on its key; she delivers d1.
    const key = `cb-${randomUUID()}`;
    const run = await aliceCreates('/r/wait', key);
    expect(run.open_requests).toEqual([expect.objectContaining({ kind: 'result', resume_key: key })]);
    const first = await call('alice', 'POST', `/results/${key}?delivery_id=d1`, succeeded('first'));
    expect(first.status, first.text).toBe(200);
    const { seq } = first.json as { seq: number };
    const applied = await runtime.store.getRun(run.run_id);

    // Act
    const same = await call('alice', 'POST', `/results/${key}?delivery_id=d1`, succeeded('first'));
    const other = await call('alice', 'POST', `/results/${key}?delivery_id=d1`, succeeded('second'));
    const bob = await call('bob', 'POST', `/results/${key}?delivery_id=d1`, succeeded('second'));
    const bobUnknown = await call(
      'bob',
      'POST',
      `/results/cb-${randomUUID()}?delivery_id=d1`,
      succeeded('second'),
    );

    // Assess
    expect(same.status).toBe(200);
    expect(same.json).toEqual({ ack: 'duplicate', original_seq: seq });
    expect(other.status, other.text).toBe(409);
    expect(other.json).toMatchObject({ code: 'delivery_id_reused', details: { resume_key: key } });
    // Bob may not see alice's run: the answer for her key is the one for a key nobody knows.
    expect(bob.status).toBe(404);
    expect(bob.json.code).toBe('resume_key_not_found');
    expect(bobUnknown.json.code).toBe(bob.json.code);
    const after = await runtime.store.getRun(run.run_id);
    expect([after?.version, after?.last_seq]).toEqual([applied?.version, applied?.last_seq]);
  });

  it('refuses a held delivery_id resent with another body, and applies the held body once its wait opens', async () => {
    // Prepare: the system caller's webhook delivers before the wait exists.
    const key = `cb-${randomUUID()}`;
    const held = await call('ops', 'POST', `/results/${key}?delivery_id=h1`, succeeded('early'));
    expect(held.status, held.text).toBe(202);

    // Act
    const same = await call('ops', 'POST', `/results/${key}?delivery_id=h1`, succeeded('early'));
    const other = await call('ops', 'POST', `/results/${key}?delivery_id=h1`, succeeded('changed'));
    const run = await aliceCreates('/r/wait', key);
    const afterWait = await call('ops', 'POST', `/results/${key}?delivery_id=h1`, succeeded('changed'));
    const repeat = await call('ops', 'POST', `/results/${key}?delivery_id=h1`, succeeded('early'));

    // Assess
    expect(same.json).toMatchObject({ ack: 'duplicate', held: true });
    expect(other.status, other.text).toBe(409);
    expect(other.json.code).toBe('delivery_id_reused');
    // The held body was applied in the wait's commit; its digest is remembered with the key.
    const events = await runtime.engine.readEvents(
      run.run_id,
      { principal: PRINCIPALS.alice as Principal },
      0,
      100,
    );
    const result = events.find((e) => e.kind === 'tool_result');
    expect(result?.data).toMatchObject({ envelope: { payload: { text: 'early' } } });
    expect(afterWait.status, afterWait.text).toBe(409);
    expect(afterWait.json.code).toBe('delivery_id_reused');
    expect(repeat.status, repeat.text).toBe(200);
    expect(repeat.json).toMatchObject({ ack: 'duplicate' });
  });
});

describe('an answer to a request already answered', () => {
  it('is rejected request_already_resolved; an unknown request id request_not_found; bob learns nothing', async () => {
    // Prepare: alice's run asks a question; she answers it.
    const run = await aliceCreates('/r/ask');
    const request = run.open_requests[0];
    expect(request).toMatchObject({ kind: 'input' });
    const requestId = String(request?.request_id);
    const answer = (controlId: string, id: string) => ({
      control_id: controlId,
      command: 'provide_input',
      request_id: id,
      value: 'AF123',
    });
    const first = await call('alice', 'POST', `/runs/${run.run_id}/controls`, answer('c1', requestId));
    expect(first.status, first.text).toBe(200);
    expect(first.json).toMatchObject({ ack: 'applied' });

    // Act
    const again = await call('alice', 'POST', `/runs/${run.run_id}/controls`, answer('c2', requestId));
    const unknown = await call(
      'alice',
      'POST',
      `/runs/${run.run_id}/controls`,
      answer('c3', `${run.run_id}/req/99`),
    );
    const foreign = await call('alice', 'POST', `/runs/${run.run_id}/controls`, answer('c4', 'other/req/1'));
    const bob = await call('bob', 'POST', `/runs/${run.run_id}/controls`, answer('c5', requestId));

    // Assess
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ ack: 'rejected', reason: 'request_already_resolved' });
    expect(unknown.json).toMatchObject({ ack: 'rejected', reason: 'request_not_found' });
    expect(foreign.json).toMatchObject({ ack: 'rejected', reason: 'request_not_found' });
    expect(bob.status).toBe(404);
    expect(bob.json.code).toBe('run_not_found');
  });
});

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

  it('answers runs racing for one early result: one takes it, the other is refused 409, never a 500', async () => {
    for (let round = 0; round < 3; round += 1) {
      const key = `race:${randomUUID()}`;
      const held = await call(
        'ops',
        'POST',
        `/results/${encodeURIComponent(key)}?delivery_id=r1`,
        succeeded('early'),
      );
      expect(held.status, held.text).toBe(202);
      const runs = [await clientToolCall('alice'), await clientToolCall('bob')];

      const parked = await Promise.all(runs.map((run) => run.parkOn(key)));

      expect(parked.map((p) => p.status).sort(), JSON.stringify(parked.map((p) => p.json))).toEqual([
        200, 409,
      ]);
      expect(parked.find((p) => p.status === 409)?.json.code).toBe('resume_key_in_use');
    }
  });

  it("refuses a client's wait on the runtime's own keys and on a key no delivery could name, writing nothing", async () => {
    const run = await clientToolCall('alice');
    const before = await runtime.store.getRun(run.runId);
    for (const [key, code] of [
      [`child:${randomUUID()}`, 'reserved_resume_key'],
      [`callback:${run.runId}/op/9`, 'reserved_resume_key'],
      ['shared:key\u200b', 'invalid_resume_key'],
    ] as const) {
      const parked = await run.parkOn(key);
      expect(parked.status, parked.text).toBe(400);
      expect(parked.json).toMatchObject({
        code: 'validation_failed',
        details: { issues: [expect.objectContaining({ code, path: 'result.envelope.resume_key' })] },
      });
    }
    expect((await runtime.store.getRun(run.runId))?.version).toBe(before?.version);
    // Its own operation's callback key is the client's to wait on, as wait_for_callback does.
    expect((await run.parkOn(`callback:${run.runId}/op/1`)).status).toBe(200);
  });
});
