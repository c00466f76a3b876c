/**
 * The typed client and the CLI against the in-process HTTP API (`fetch: (req) => app.fetch(req)`)
 * over a runtime on DynamoDB Local and fauxqs, with in-process reducers.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { runCli } from '../../bin/commands/program.ts';
import { type AgentRunsClient, ApiError, createClient } from '../../lib/client/index.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { askOnce, toolLoop } from '../support/reducers.ts';

const _local = inject('localServices');
const TOKEN = 'client-token';
let runtime: Runtime;
let app: HttpApp;
let client: AgentRunsClient;

beforeAll(async () => {
  ({ runtime } = await localRuntime('http-client', {
    reducers: inProcessReducers({ '/r/ask': askOnce(), '/r/loop': toolLoop(1) }),
    registerTools(registry) {
      registry.register({
        name: 'lookup',
        version: '2.1.0',
        input_schema: { type: 'object' },
        handler: { kind: 'module', fn: async () => ({ ok: true }) },
        metadata: { mutating: false, replay_safe: true, risk: 'medium' },
      });
    },
  }));
  app = createHttpApp({ ...runtime, auth: bearerTokenAuth(TOKEN), pollIntervalMs: 50, log: () => {} });
  client = createClient({ baseUrl: 'http://api.test/', token: TOKEN, fetch: (req) => app.fetch(req) });
});

afterAll(() => runtime.close());

async function waitingRun() {
  const { run, control_capability } = await client.createRun({
    subject: uniqueSubject('local-user'),
    reducer: { function_path: '/r/ask' },
    input: 'go',
  });
  await runtime.engine.stepRun(run.run_id);
  const waiting = await client.getRun(run.run_id);
  expect(waiting.status).toBe('waiting');
  return { run: waiting, control_capability };
}

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('the typed client', () => {
  it('creates, reads and lists a run, and answers health and the OpenAPI document', async () => {
    expect(await client.health()).toEqual({ status: 'ok' });
    expect((await client.openapi()).openapi).toBe('3.1.0');
    const subject = uniqueSubject('local-user');
    const created = await client.createRun({ subject, reducer: { function_path: '/r/ask' }, input: 'hi' });
    expect(created).toMatchObject({ created: true, control_capability: expect.any(String) });
    expect(await client.createRun({ subject, input: 'again' })).toMatchObject({
      created: false,
      run: { run_id: created.run.run_id },
    });
    expect((await client.getRun(created.run.run_id)).subject).toEqual(subject);
    const page = await client.listRuns({ subject });
    expect(page.runs.map((r) => r.run_id)).toEqual([created.run.run_id]);
  });

  it('follows events until the run ends, yielding every seq once and in order', async () => {
    const { run } = await waitingRun();
    const statuses: string[] = [];
    const seen: RunEvent[] = [];
    const following = (async () => {
      for await (const event of client.followEvents(run.run_id, {
        wait: 5,
        onPage: (p) => statuses.push(p.status),
      })) {
        seen.push(event);
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    const request = run.open_requests[0];
    expect(await client.answer(run.run_id, request?.request_id ?? '', 'HAT001')).toMatchObject({
      ack: 'applied',
    });
    await runtime.engine.stepRun(run.run_id);
    await following;

    const done = await client.getRun(run.run_id);
    expect(done).toMatchObject({ status: 'completed', summary: 'HAT001' });
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: done.last_seq }, (_, i) => i + 1));
    expect(statuses.at(-1)).toBe('completed');
  });

  it('generates a control_id when none is given, and a reused one returns the duplicate ack', async () => {
    const { run } = await waitingRun();
    const first = await client.steer(run.run_id, { text: 'one' });
    const second = await client.steer(run.run_id, { text: 'two' });
    expect(first).toMatchObject({ ack: 'applied' });
    expect(second).toMatchObject({ ack: 'applied' });
    const retried = await client.steer(run.run_id, 'x', { control_id: 'fixed' });
    const again = await client.steer(run.run_id, 'x', { control_id: 'fixed' });
    expect(again).toEqual({ ack: 'duplicate', original_seq: retried.ack === 'applied' ? retried.seq : -1 });
    const events = await client.events(run.run_id, { after: run.last_seq });
    const ids = events.events.filter((e) => e.kind === 'steer_queued').map((e) => e.data.control_id);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
  });

  it('pauses and resumes with a budget increase, returns rejected acks as values, and lists checkpoints', async () => {
    const { run } = await waitingRun();
    expect(await client.pause(run.run_id, { reason: 'lunch' })).toMatchObject({ ack: 'applied' });
    expect((await client.getRun(run.run_id)).status).toBe('paused');
    const checkpoints = await client.checkpoints(run.run_id);
    expect(checkpoints).toHaveLength(1);
    expect(await client.checkpoint(run.run_id, checkpoints[0]?.n ?? 0)).toMatchObject({ reason: 'paused' });
    expect(await client.resume(run.run_id, { budget_increase: { max_operations: 5 } })).toMatchObject({
      ack: 'applied',
    });
    expect(await client.approve(run.run_id, 'nope', 'd')).toMatchObject({ ack: 'rejected' });
    expect(await client.stop(run.run_id)).toMatchObject({ ack: 'applied' });
    expect(await client.stop(run.run_id)).toMatchObject({ ack: 'rejected', reason: 'run_terminal' });
  });

  it('throws ApiError with the API code, status and details', async () => {
    const missing = await rejection(client.getRun(`run_${randomUUID()}`));
    expect(missing).toMatchObject({ code: 'run_not_found', status: 404 });

    const invalid = await rejection(client.createRun({ subject: { workspace: '', path: '/x' }, input: 1 }));
    expect(invalid).toMatchObject({ code: 'validation_failed', status: 400 });
    expect(invalid.details.issues).toEqual([expect.objectContaining({ path: 'subject.workspace' })]);

    const anonymous = createClient({ baseUrl: 'http://api.test', fetch: (req) => app.fetch(req) });
    expect(await rejection(anonymous.tools())).toMatchObject({ code: 'unauthenticated', status: 401 });

    const down = createClient({
      baseUrl: 'http://api.test',
      fetch: async () => {
        throw new TypeError('fetch failed');
      },
    });
    const unreachable = await rejection(down.health());
    expect(unreachable).toMatchObject({ code: 'unreachable', status: 0, retryable: true });

    // A key no wait holds yet is unknown to a user (only a system caller's early result is held).
    const key = `rk-${randomUUID()}`;
    expect(await rejection(client.deliver(key, { ok: 1 }))).toMatchObject({
      code: 'resume_key_not_found',
      status: 404,
    });
  });

  it('lists tools and registers a function artifact', async () => {
    expect(await client.tools()).toEqual([
      expect.objectContaining({
        name: 'lookup',
        version: '2.1.0',
        metadata: expect.objectContaining({ risk: 'medium' }),
      }),
    ]);
    const bytes = new TextEncoder().encode('export function reduce(r) { return r; }');
    const artifact = await client.putFunction('/agents/echo', bytes, 'js');
    expect(artifact).toMatchObject({ function_path: '/agents/echo', kind: 'js', size: bytes.byteLength });
    expect((await runtime.functions.get('/agents/echo'))?.hash).toBe(artifact.hash);
  });

  it('publishes a tool version and reads it back with every version of its name', async () => {
    const name = `lookup-${randomUUID()}`;
    const document = {
      name,
      version: '1.0.0',
      input_schema: { type: 'object' },
      metadata: { mutating: false, replay_safe: true, risk: 'low' },
      target: { kind: 'http', url: 'http://127.0.0.1:9/never' },
    };
    await client.publishEntry('tools', document);
    await client.publishEntry('tools', { ...document, version: '1.1.0' });

    const latest = await client.getEntry('tools', name);
    const first = await client.getEntry('tools', name, '1.0.0');

    expect(latest.entry).toMatchObject({ name, version: '1.1.0' });
    expect(latest.versions).toEqual(['1.0.0', '1.1.0']);
    expect(first.entry).toMatchObject({ name, version: '1.0.0' });
  });
});

describe('the CLI against the API', () => {
  async function cli(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(COMMANDS, ['--url', 'http://api.test', '--token', TOKEN, ...args], {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      cwd: '/nonexistent',
      env: {},
      fetch: (req) => app.fetch(req),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('creates a run, follows its events live until it completes, and shows it', async () => {
    const subject = uniqueSubject('local-user');
    const created = await cli(
      '--json',
      'runs',
      'create',
      '--workspace',
      subject.workspace,
      '--path',
      subject.path,
      '--reducer',
      '/r/loop',
      '--input',
      '{"q":1}',
    );
    expect(created.code).toBe(0);
    const { run } = JSON.parse(created.out) as { run: { run_id: string } };

    const follow = cli('events', run.run_id, '--follow');
    await new Promise((r) => setTimeout(r, 200));
    await runtime.engine.stepRun(run.run_id);
    const followed = await follow;
    expect(followed.code).toBe(0);
    const lines = followed.out.split('\n');
    expect(lines[0]).toMatch(/^# {3}1 {2}\d\d:\d\d:\d\d\.\d{3} {2}run_started/);
    expect(followed.out).toContain('tool_result');
    const done = await client.getRun(run.run_id);
    expect(done.status).toBe('completed');
    // The end line says the status once, then the outcome (terminal_reason completed:succeeded).
    expect('terminal_reason' in done ? done.terminal_reason : '').toBe('completed:succeeded');
    expect(lines.at(-1)).toBe(`run ${run.run_id} completed (succeeded)`);
    expect(lines.filter((l) => l.startsWith('#'))).toHaveLength(done.last_seq);

    const shown = await cli('runs', 'get', run.run_id);
    expect(shown.out).toMatch(/^run\s+run_/);
    expect(shown.out).toMatch(/status\s+completed/);
    expect(shown.out).toContain('tool calls 1');
  });

  it('answers a question and prints the ack; a rejected control exits 2', async () => {
    const { run } = await waitingRun();
    const requestId = run.open_requests[0]?.request_id ?? '';
    const shown = await cli('runs', 'get', run.run_id);
    expect(shown.out).toContain(`$ agent-runs answer ${run.run_id} ${requestId} '<your answer>'`);

    const answered = await cli('answer', run.run_id, requestId, 'HAT001');
    expect(answered).toMatchObject({ code: 0, out: expect.stringMatching(/^applied \(seq \d+\)$/) });
    const again = await cli('answer', run.run_id, requestId, 'HAT002');
    expect(again.code).toBe(2);
    expect(again.out).toMatch(/^rejected: request_already_resolved \(seq \d+\)$/);
  });

  it('prints the API error code on stderr and exits 1', async () => {
    const missing = await cli('runs', 'get', 'run_missing');
    expect(missing).toMatchObject({ code: 1, out: '' });
    expect(missing.err).toMatch(/^error: run_not_found: /);
  });
});
