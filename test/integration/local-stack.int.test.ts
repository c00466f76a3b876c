/**
 * The local stack (`npm start`, lib/local/stack.ts) as a whole: its own DynamoDB Local and
 * fauxqs, the HTTP API behind the local gateway with a bearer token, runs driven to completion
 * by the SQS poller, a clean stop, and a clear error when the port is taken; several callers
 * (two users, an agent acting for one of them, a system caller) with tokens of `agent-runs token`,
 * verified as API Gateway's JWT authorizer would.
 * docs/guides/local-stack.md, "How it stands in for AWS".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { runCli } from '../../bin/commands/program.ts';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, LocalStackError, startLocalStack } from '../../lib/local/stack.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { until } from '../support/local-runtime.ts';

let stack: LocalStack;
let modelCalls = 0;
/** The stack's state directory: `agent-runs token` run here signs with the stack's issuer. */
const stateDir = mkdtempSync(join(tmpdir(), 'local-stack-'));

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir,
    logger: SILENT_LOG,
    sweepIntervalMs: 500,
    // The machine running the suite may be busy: do not let the 200 ms reducer limit flake this test.
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: {
      [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
        modelCalls += 1;
        return {
          message: { text: 'all done' },
          tool_calls: [],
          finish_reason: 'stop',
          usage: { input_tokens: 12, output_tokens: 3 },
        };
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** `agent-runs token ...args` in the stack's directory: the token it prints. */
async function cliToken(...args: string[]): Promise<string> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(COMMANDS, ['token', ...args], {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    cwd: stateDir,
    env: {},
  });
  expect(code, err.join('\n')).toBe(0);
  return out.join('').trim();
}

const as = (token: string, path: string, init: RequestInit = {}) =>
  fetch(`${stack.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
  });

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${stack.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json', ...init.headers },
  });

describe('local stack', () => {
  it('is ready in under 20 s and serves /health and /openapi.json without a token', async () => {
    expect(stack.startupMs).toBeLessThan(20_000);
    expect(stack.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(stack.visibilityTimeoutSeconds).toBe(60);

    const health = await fetch(`${stack.url}/health`);
    expect(health.status).toBe(200);
    const openapi = await fetch(`${stack.url}/openapi.json`);
    expect(openapi.status).toBe(200);
    expect(await openapi.json()).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) });
  });

  it('rejects a request without the token or with a wrong one', async () => {
    expect((await fetch(`${stack.url}/runs`)).status).toBe(401);
    const wrong = await fetch(`${stack.url}/runs`, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ code: 'unauthenticated' });
  });

  it('completes a run created over HTTP through the step poller', async () => {
    // Act: create a task run on the default agent reducer; the scripted model answers once.
    const subject = { workspace: 'local-stack', path: `/runs/${crypto.randomUUID()}` };
    const created = await api('/runs', {
      method: 'POST',
      body: JSON.stringify({
        subject,
        reducer: { function_path: AGENT_LOOP_PATH },
        input: 'say done',
        context: { mode: 'task' },
      }),
    });
    expect(created.status).toBe(201);
    const { run } = (await created.json()) as { run: { run_id: string } };

    // Assess: the poller steps it to completion with the model's answer as the summary.
    const done = await until(
      async () => (await (await api(`/runs/${run.run_id}`)).json()) as { status: string; summary?: string },
      (r) => r.status === 'completed',
      20_000,
    );
    expect(done.summary).toBe('all done');
    expect(modelCalls).toBeGreaterThanOrEqual(1);
    // The handler returns after the commit; the poller then deletes the message it processed.
    await until(
      async () => stack.poller.stats.deleted,
      (n) => n >= 1,
      5_000,
    );
    expect(stack.metrics.totals.Steps).toBeGreaterThanOrEqual(1);
    // The table's stream consumer frees the ended run's subject (its ending commit left that to it).
    expect(
      await until(
        () => stack.runtime.store.findBySubject(subject),
        (holder) => holder === null,
        10_000,
      ),
    ).toBeNull();
  });

  it('fails fast with port_in_use when the HTTP port is taken, before starting any service', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const started = performance.now();
      const error = await startLocalStack({ port, stateDir: false, logger: SILENT_LOG }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LocalStackError);
      expect(error).toMatchObject({ code: 'port_in_use' });
      expect((error as Error).message).toContain(`port ${port} is already in use`);
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});

describe('local stack shutdown', () => {
  it('stops cleanly: the port is closed and a second stop is a no-op', async () => {
    const own = await startLocalStack({ port: 0, stateDir: false, logger: SILENT_LOG });
    expect((await fetch(`${own.url}/health`)).status).toBe(200);

    await own.stop();
    await own.stop();

    await expect(fetch(`${own.url}/health`)).rejects.toThrow();
  });
});

describe('callers of the local stack', () => {
  it('tells apart two users, an agent acting for one and a system caller, with tokens of `agent-runs token`', async () => {
    // Prepare: tokens for alice, bob (group staff) and an operator; the admin registers an agent for alice.
    const [alice, bob, ops] = [
      await cliToken('--sub', 'alice'),
      await cliToken('--sub', 'bob', '--groups', 'staff'),
      await cliToken('--sub', 'ops', '--system'),
    ];
    const agentId = `functions:/agents/local-${crypto.randomUUID()}`;
    const published = await api('/admin/agents', {
      method: 'POST',
      body: JSON.stringify({ agent_id: agentId, acts_for: { users: ['alice'] }, tools: [] }),
    });
    expect(published.status, await published.clone().text()).toBe(201);
    // Workspaces are owned: alice's runs (and her agent's) go in her own workspace.
    const body = (who: string, workspace = 'user:alice') =>
      JSON.stringify({
        subject: { workspace, path: `/callers/${crypto.randomUUID()}` },
        reducer: null,
        input: who,
      });

    // Act: alice creates a run herself and one as the agent; bob tries the agent too.
    const own = await as(alice, '/runs', { method: 'POST', body: body('alice') });
    const viaAgent = await as(alice, '/runs', {
      method: 'POST',
      body: JSON.stringify({ ...JSON.parse(body('agent')), as_agent: agentId }),
    });
    const bobAsAgent = await as(bob, '/runs', {
      method: 'POST',
      body: JSON.stringify({ ...JSON.parse(body('bob')), as_agent: agentId }),
    });

    // Assess: the principals come from the verified claims; bob sees neither run, ops sees both.
    expect(own.status).toBe(201);
    const ownRun = ((await own.json()) as { run: { run_id: string; principal: unknown } }).run;
    expect(ownRun.principal).toEqual({ kind: 'user', id: 'alice' });
    expect(viaAgent.status).toBe(201);
    const agentRun = ((await viaAgent.json()) as { run: { run_id: string; principal: unknown } }).run;
    expect(agentRun.principal).toEqual({ kind: 'agent', id: agentId, on_behalf_of: 'alice' });
    expect(bobAsAgent.status).toBe(403);
    expect(await bobAsAgent.json()).toMatchObject({ code: 'agent_not_allowed' });
    // bob may not create in alice's workspace, nor in one nobody was granted; the admin (the
    // default user) may create in the latter, and grants it to bob's group.
    const shared = `local-stack-${crypto.randomUUID()}`;
    for (const workspace of ['user:alice', shared]) {
      const refused = await as(bob, '/runs', { method: 'POST', body: body('bob', workspace) });
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ code: 'workspace_not_granted' });
    }
    expect((await api('/runs', { method: 'POST', body: body('admin', shared) })).status).toBe(201);
    const granted = await api('/admin/workspaces', {
      method: 'POST',
      body: JSON.stringify({ workspace: shared, groups: ['staff'] }),
    });
    expect(granted.status, await granted.clone().text()).toBe(201);
    expect((await as(bob, '/runs', { method: 'POST', body: body('bob', shared) })).status).toBe(201);
    for (const run of [ownRun, agentRun]) {
      expect((await as(alice, `/runs/${run.run_id}`)).status).toBe(200);
      const hidden = await as(bob, `/runs/${run.run_id}`);
      expect(hidden.status).toBe(404);
      expect(await hidden.json()).toMatchObject({ code: 'run_not_found' });
      expect((await as(ops, `/runs/${run.run_id}`)).status).toBe(200);
    }
    const bobsList = (await (await as(bob, '/runs?status=queued&limit=100')).json()) as {
      runs: { run_id: string }[];
    };
    expect(bobsList.runs.map((r) => r.run_id)).not.toContain(ownRun.run_id);
  });

  it('refuses a token signed by another key, and a plain user the admin routes', async () => {
    const [header, payload] = (await cliToken('--sub', 'alice', '--admin')).split('.');
    const forged = `${header}.${payload}.${'A'.repeat(86)}`;
    expect((await as(forged, '/runs?status=queued')).status).toBe(401);
    const user = await cliToken('--sub', 'carol');
    const admin = await as(user, '/admin/agents', {
      method: 'POST',
      body: JSON.stringify({ agent_id: 'functions:/agents/x', acts_for: { users: ['carol'] }, tools: [] }),
    });
    expect(admin.status).toBe(403);
  });
});
