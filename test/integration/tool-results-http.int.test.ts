/**
 * Tool results through the HTTP API, as a peer's tools send them: over the runtime on DynamoDB
 * Local and fauxqs, a run calls an in-process tool (through the dispatcher) or waits and gets a
 * result over POST /results/{resume_key}; the test reads what the reducer was given from
 * GET /runs/{id}/events: one normalizer on every path, null optionals, exact refusal codes
 * (docs/contracts/tool-result.md, "The tool-result envelope"). Each test uses its own subject and
 * its own resume key.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunEvent, type RunRecord, TOOL_RESULT_ENVELOPE } from '../../lib/contracts/index.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { toolLoop } from '../support/reducers.ts';

const _local = inject('localServices');
const TOKEN = 'tool-results-token';

/** What each tool answers, keyed by the run id (so tests never share an answer). */
const answers = new Map<string, unknown>();

let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('tool-results', {
    heartbeatMs: 100,
    reducers: inProcessReducers({ '/r/answer': toolLoop(1, 'answer') }),
    registerTools(registry) {
      registry.register({
        name: 'answer',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: { kind: 'module', fn: async (_args, ctx) => answers.get(ctx.run_id) },
        metadata: { mutating: false, replay_safe: true },
      });
    },
  }));
  app = createHttpApp({
    ...runtime,
    auth: bearerTokenAuth(TOKEN, { kind: 'user', id: 'carol' }),
    pollIntervalMs: 50,
    log: () => {},
  });
});

afterAll(() => runtime.close());

function request(method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return Promise.resolve(
    app.request(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }),
  );
}

/** Creates a run over HTTP whose one tool call answers `answer`, and runs its first step. */
async function runCalling(answer: unknown): Promise<RunRecord> {
  const response = await request('POST', '/runs', {
    subject: uniqueSubject('carol'),
    reducer: { function_path: '/r/answer' },
    input: 'go',
  });
  expect(response.status).toBe(201);
  const { run } = (await response.json()) as { run: RunRecord };
  answers.set(run.run_id, answer);
  await runtime.engine.stepRun(run.run_id);
  return run;
}

async function toolResults(runId: string): Promise<{ envelope: Record<string, unknown> }[]> {
  const response = await request('GET', `/runs/${runId}/events?after=0&limit=1000`);
  const page = (await response.json()) as { events: RunEvent[] };
  return page.events
    .filter((event) => event.kind === 'tool_result')
    .map((event) => event.data as { envelope: Record<string, unknown> });
}

const peerFailure = {
  envelope: TOOL_RESULT_ENVELOPE,
  operation_id: null,
  status: 'failed',
  resume_key: null,
  writes: null,
  diagnostics: [
    { code: 'stale_revision', severity: 'error', class: null, message: 'reload first', path: null },
  ],
  retry_policy: { retryable: false },
  error_class: null,
};

describe('tool results through the HTTP API', () => {
  it('gives the reducer a dispatched peer envelope whose optionals are null as the tool sent it', async () => {
    const run = await runCalling(peerFailure);
    const [result] = await toolResults(run.run_id);
    expect(result?.envelope).toMatchObject({ status: 'failed', retry_policy: { retryable: false } });
    expect(result?.envelope.diagnostics).toEqual([
      { code: 'stale_revision', severity: 'error', message: 'reload first' },
    ]);
  });

  it('refuses a dispatched waiting envelope with resume_key "" as waiting_without_resume_key, and does not park', async () => {
    const run = await runCalling({ envelope: TOOL_RESULT_ENVELOPE, status: 'waiting', resume_key: '' });
    const [result] = await toolResults(run.run_id);
    expect(result?.envelope).toMatchObject({ status: 'failed', error_class: 'tool_error' });
    expect(result?.envelope.diagnostics).toEqual([
      expect.objectContaining({ code: 'waiting_without_resume_key', path: 'resume_key' }),
    ]);
    const stored = await runtime.store.getRun(run.run_id);
    expect(stored?.open_requests).toEqual([]);
  });

  it('refuses dispatched writes without a primary artifact: none of them reach the reducer', async () => {
    const writes = [{ locator: { workspace: 'content', path: '/a' }, action: 'created' }];
    const run = await runCalling({ envelope: TOOL_RESULT_ENVELOPE, status: 'succeeded', writes });
    const [result] = await toolResults(run.run_id);
    expect(result?.envelope).toMatchObject({ status: 'failed', writes: [] });
    expect(result?.envelope.diagnostics).toEqual([
      expect.objectContaining({ code: 'writes_without_primary', path: 'artifact_refs' }),
    ]);
  });

  it('gives a delivered result the same envelope as the same answer from a dispatched tool', async () => {
    const key = `cb-${randomUUID()}`;
    const waiting = await runCalling({ envelope: TOOL_RESULT_ENVELOPE, status: 'waiting', resume_key: key });
    expect((await runtime.store.getRun(waiting.run_id))?.open_requests).toEqual([
      expect.objectContaining({ kind: 'result', resume_key: key }),
    ]);
    const delivered = await request('POST', `/results/${key}`, peerFailure);
    expect(delivered.status).toBe(200);
    const dispatched = await runCalling(peerFailure);

    const [fromDelivery] = await toolResults(waiting.run_id);
    const [fromDispatch] = await toolResults(dispatched.run_id);
    const { operation_id: _a, ...deliveredEnvelope } = fromDelivery?.envelope ?? {};
    const { operation_id: _b, ...dispatchedEnvelope } = fromDispatch?.envelope ?? {};
    expect(deliveredEnvelope).toEqual(dispatchedEnvelope);
    expect(deliveredEnvelope).toMatchObject({ status: 'failed' });
  });

  it('refuses a delivered envelope the contract refuses with 400 naming the field and the code, and keeps the request open', async () => {
    const key = `cb-${randomUUID()}`;
    const waiting = await runCalling({ envelope: TOOL_RESULT_ENVELOPE, status: 'waiting', resume_key: key });
    const writes = [{ locator: { workspace: 'content', path: '/a' }, action: 'created' }];
    const refused = await request('POST', `/results/${key}`, {
      envelope: TOOL_RESULT_ENVELOPE,
      status: 'succeeded',
      writes,
    });
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as {
      code: string;
      details: { issues: { path: string; code: string }[] };
    };
    expect(body.code).toBe('validation_failed');
    expect(body.details.issues[0]).toMatchObject({ path: 'artifact_refs', code: 'writes_without_primary' });
    const still = await runtime.store.getRun(waiting.run_id);
    expect(still?.open_requests).toEqual([expect.objectContaining({ kind: 'result', resume_key: key })]);
    expect(await toolResults(waiting.run_id)).toEqual([]);
    // The corrected delivery is taken.
    const corrected = await request('POST', `/results/${key}`, peerFailure);
    expect(corrected.status).toBe(200);
    expect(await toolResults(waiting.run_id)).toHaveLength(1);
  });
});
