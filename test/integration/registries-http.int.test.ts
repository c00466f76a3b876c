/**
 * Tools, policy and agents as data, through the HTTP API in-process over DynamoDB Local and
 * fauxqs: an admin publishes an HTTP tool (served by this test, its bearer secret read through
 * the runtime's secret resolver), policies and agents; two users (alice in group `staff`, bob)
 * and agents acting for them create runs, which pin the registry versions at admission and keep
 * them. The registries live in a table of this file's own (a registry's head is one item per
 * table, and a published policy applies to every run in it).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { createTableInput } from '../../lib/store/table.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { toolLoop } from '../support/reducers.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
const tableName = `registries-${randomUUID()}`;
const TOKENS = { admin: 'admin-token', alice: 'alice-token', bob: 'bob-token', system: 'system-token' };
const SECRET = 'tool-secret-value-7f3a';
const SECRET_NAME = 'agent-runs/tools/remote-key';

let runtime: Runtime;
let app: HttpApp;
let server: Server;
let toolUrl: string;
/** What the HTTP tool received: the principal of each call. */
const calls: { tool: string; principal: unknown; authorized: boolean }[] = [];

beforeAll(async () => {
  await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName)));
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      const body = JSON.parse(text) as { args: { i?: number }; context: { principal?: unknown } };
      const authorized = req.headers.authorization === `Bearer ${SECRET}`;
      calls.push({ tool: req.url ?? '', principal: body.context.principal, authorized });
      res.writeHead(authorized ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(authorized ? { echo: body.args.i ?? null } : { error: 'no' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  toolUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ({ runtime } = await localRuntime('registries', {
    tableName,
    reducers: inProcessReducers({
      '/r/remote': toolLoop(1, 'remote_lookup'),
      '/r/guarded': toolLoop(1, 'guarded_lookup'),
      '/r/delete': toolLoop(1, 'remote_delete'),
    }),
    registerTools(registry) {
      registry.register({
        name: 'code_tool',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: { kind: 'module', fn: async () => ({ ok: true }) },
        metadata: { mutating: false, replay_safe: true },
      });
    },
    secrets: async (ref) => {
      if (ref.source === 'secrets_manager' && ref.name === SECRET_NAME) return SECRET;
      throw new Error(`no secret ${ref.name}`);
    },
  }));
  app = createHttpApp({
    ...runtime,
    auth: anyOf(
      bearerTokenAuth(TOKENS.admin, { kind: 'user', id: 'root', groups: ['admin'] }, { admin: true }),
      bearerTokenAuth(TOKENS.alice, { kind: 'user', id: 'alice', groups: ['staff'] }, { admin: false }),
      bearerTokenAuth(TOKENS.bob, { kind: 'user', id: 'bob' }, { admin: false }),
      bearerTokenAuth(TOKENS.system, { kind: 'system', id: 'trigger' }, { admin: true }),
    ),
    log: () => {},
  });
});

afterAll(async () => {
  runtime.close();
  await new Promise((resolve) => server.close(resolve));
  await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
  clients.destroy();
});

// ---------------------------------------------------------------- helpers

type Who = keyof typeof TOKENS;

function call(who: Who, method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${TOKENS[who]}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return Promise.resolve(
    app.request(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }),
  );
}

async function json<T = Record<string, unknown>>(response: Response | Promise<Response>): Promise<T> {
  return (await (await response).json()) as T;
}

function httpTool(name: string, version: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    version,
    description: `${name} over HTTP`,
    input_schema: { type: 'object', properties: { i: { type: 'integer' } } },
    metadata: { mutating: false, replay_safe: true, risk: 'medium' },
    target: {
      kind: 'http',
      url: `${toolUrl}/${name}`,
      auth: { secret: { source: 'secrets_manager', name: SECRET_NAME } },
    },
    ...extra,
  };
}

async function publish(kind: 'tools' | 'policy' | 'agents', body: unknown, who: Who = 'admin') {
  const response = await call(who, 'POST', `/admin/${kind}`, body);
  return { status: response.status, body: await json<Record<string, unknown>>(response) };
}

/** The user whose own workspace `who`'s runs go in (a system caller may use any: alice's). */
const OWNER: Record<Who, string> = { admin: 'root', alice: 'alice', bob: 'bob', system: 'alice' };

async function create(who: Who, reducer: string, extra: Record<string, unknown> = {}) {
  const response = await call(who, 'POST', '/runs', {
    subject: uniqueSubject(OWNER[who]),
    reducer: { function_path: reducer },
    input: 'go',
    ...extra,
  });
  return {
    status: response.status,
    body: await json<{ run: RunRecord } & Record<string, unknown>>(response),
  };
}

/** Steps the run until it rests, and returns its stored record and events. */
async function settle(runId: string): Promise<{ record: RunRecord; events: RunEvent[] }> {
  for (let i = 0; i < 10; i += 1) {
    const outcome = await runtime.engine.stepRun(runId);
    if (outcome.kind !== 'progressed') break;
  }
  const record = await runtime.store.getRun(runId);
  if (record === null) throw new Error(`no run ${runId}`);
  return { record, events: await runtime.store.readEvents(runId, 0, 100) };
}

const toolResults = (events: RunEvent[]) =>
  events.filter((e) => e.kind === 'tool_result').map((e) => e.data.envelope as Record<string, unknown>);

// ---------------------------------------------------------------- tests

// The policy is the table's: every test that publishes one leaves the table with none in force.
afterEach(async () => {
  const current = await json<{ entries: { body: { rules: unknown[] } }[] }>(
    call('admin', 'GET', '/admin/policy'),
  );
  if ((current.entries[0]?.body.rules.length ?? 0) > 0) await publish('policy', { rules: [] });
});

describe('registries over HTTP: who may manage them', () => {
  it('refuses a non-admin user every registry route with 403 and writes nothing', async () => {
    for (const kind of ['tools', 'policy', 'agents'] as const) {
      const before = await json<{ registry_version: number }>(call('admin', 'GET', `/admin/${kind}`));
      const body = kind === 'tools' ? httpTool('bobs_tool', '1.0.0') : kind === 'policy' ? { rules: [] } : {};
      const refused = await publish(kind, body, 'bob');
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('unauthorized');
      expect((await call('bob', 'GET', `/admin/${kind}`)).status).toBe(403);
      expect((await call('alice', 'GET', `/admin/${kind}/entry?name=x`)).status).toBe(403);
      const after = await json<{ registry_version: number }>(call('admin', 'GET', `/admin/${kind}`));
      expect(after.registry_version).toBe(before.registry_version);
    }
  });

  it('lets a system caller publish, as admins do', async () => {
    const published = await publish('tools', httpTool('system_published', '1.0.0'), 'system');
    expect(published.status).toBe(201);
    expect(published.body).toMatchObject({ kind: 'tools', name: 'system_published', created: true });
  });
});

describe('tools as data', () => {
  it('publishes an HTTP tool, lists its metadata only to everyone, and never changes a published version', async () => {
    const first = await publish('tools', httpTool('remote_lookup', '1.0.0'));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ name: 'remote_lookup', version: '1.0.0', created: true });
    const again = await publish('tools', httpTool('remote_lookup', '1.0.0'));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, registry_version: first.body.registry_version });
    const changed = await publish('tools', httpTool('remote_lookup', '1.0.0', { description: 'changed' }));
    expect(changed.status).toBe(409);
    expect(changed.body.code).toBe('version_immutable');

    const discovery = await call('bob', 'GET', '/v1/tools');
    const text = await discovery.text();
    const tools = (JSON.parse(text) as { tools: Record<string, unknown>[] }).tools;
    const listed = tools.find((t) => t.name === 'remote_lookup');
    expect(listed).toMatchObject({ version: '1.0.0', metadata: { risk: 'medium' } });
    expect(listed).not.toHaveProperty('target');
    expect(tools.map((t) => t.name)).toContain('code_tool');
    expect(text).not.toContain(toolUrl);
    expect(text).not.toContain(SECRET_NAME);

    const entry = await json<{ entry: { body: Record<string, unknown> }; versions: string[] }>(
      call('admin', 'GET', '/admin/tools/entry?name=remote_lookup'),
    );
    expect(entry.versions).toEqual(['1.0.0']);
    expect(entry.entry.body.description).toBe('remote_lookup over HTTP');
  });

  it('refuses a tool whose schema does not compile, whose target is not https, or that takes a code tool name', async () => {
    const before = await json<{ registry_version: number }>(call('admin', 'GET', '/admin/tools'));
    const badSchema = await publish(
      'tools',
      httpTool('bad_schema', '1.0.0', { input_schema: { type: 'nope' } }),
    );
    expect(badSchema.status).toBe(400);
    expect(badSchema.body.code).toBe('validation_failed');
    expect(JSON.stringify(badSchema.body.details)).toContain('input_schema');
    const plain = await publish('tools', {
      ...httpTool('plain_http', '1.0.0'),
      target: { kind: 'http', url: 'http://example.com/x' },
    });
    expect(plain.status).toBe(400);
    expect(JSON.stringify(plain.body.details)).toContain('url');
    const badVersion = await publish('tools', httpTool('bad_version', 'v1'));
    expect(badVersion.status).toBe(400);
    const reserved = await publish('tools', httpTool('code_tool', '2.0.0'));
    expect(reserved.status).toBe(409);
    expect(reserved.body.code).toBe('tool_name_reserved');
    const after = await json<{ registry_version: number }>(call('admin', 'GET', '/admin/tools'));
    expect(after.registry_version).toBe(before.registry_version);
  });

  it('calls a published tool from a run, with its secret read at call time', async () => {
    await publish('tools', httpTool('remote_lookup', '1.0.0'));
    const created = await create('alice', '/r/remote');
    expect(created.status).toBe(201);
    const { record, events } = await settle(created.body.run.run_id);
    expect(record.status).toBe('completed');
    expect(toolResults(events)[0]).toMatchObject({ status: 'succeeded', payload: { echo: 0 } });
    expect(calls.at(-1)).toMatchObject({ tool: '/remote_lookup', authorized: true });
    expect(JSON.stringify(events)).not.toContain(SECRET);
  });
});

describe('runs pin the registries at admission', () => {
  it('keeps the catalogue and policy a run was admitted with, whatever is published later', async () => {
    await publish('tools', httpTool('guarded_lookup', '1.0.0'));
    const early = await create('alice', '/r/guarded');
    const pinned = early.body.run.pinned;
    expect(pinned).toBeDefined();
    // A policy published after admission does not reach the early run.
    const policy = await publish('policy', {
      rules: [{ effect: 'deny', tools: ['guarded_lookup'], code: 'guarded_frozen' }],
    });
    expect(policy.status).toBe(201);
    const late = await create('alice', '/r/guarded');
    expect(late.body.run.pinned?.policy).toBe(policy.body.registry_version);
    expect(late.body.run.pinned?.policy).toBeGreaterThan(pinned?.policy ?? 0);

    const earlyRun = await settle(early.body.run.run_id);
    expect(toolResults(earlyRun.events)[0]?.status).toBe('succeeded');
    const lateRun = await settle(late.body.run.run_id);
    expect(toolResults(lateRun.events)[0]).toMatchObject({
      status: 'failed',
      error_class: 'permission_denied',
      diagnostics: [expect.objectContaining({ code: 'guarded_frozen' })],
    });
    // The run_started event records the pins too.
    expect(lateRun.events[0]?.data.pinned).toEqual(late.body.run.pinned);
  });

  it('offers the safer action a transform_to_safer_action rule names, instead of running the call', async () => {
    await publish(
      'tools',
      httpTool('remote_delete', '1.0.0', { metadata: { mutating: true, replay_safe: true } }),
    );
    await publish('policy', {
      rules: [
        {
          effect: 'transform_to_safer_action',
          tools: ['remote_delete'],
          code: 'use_archive',
          safer: { tool: 'remote_lookup', args: { i: 1 } },
        },
      ],
    });
    const before = calls.length;
    const created = await create('alice', '/r/delete');
    const { events } = await settle(created.body.run.run_id);
    expect(toolResults(events)[0]).toMatchObject({
      status: 'failed',
      error_class: 'permission_denied',
      suggested_next_actions: [{ action: 'remote_lookup', args: { i: 1 }, reason: 'use_archive' }],
    });
    expect(calls.slice(before).filter((c) => c.tool === '/remote_delete')).toEqual([]);
  });

  it('holds a call a published policy requires approval for until it is approved, then runs it', async () => {
    await publish('tools', httpTool('remote_lookup', '1.0.0'));
    await publish('policy', {
      rules: [
        { effect: 'require_approval', tools: ['remote_lookup'], groups: ['staff'], code: 'staff_review' },
      ],
    });
    const created = await create('alice', '/r/remote');
    const runId = created.body.run.run_id;
    const waiting = await settle(runId);
    expect(waiting.record.status).toBe('waiting');
    const request = waiting.record.open_requests[0];
    if (request?.kind !== 'approval') throw new Error('expected an approval');
    const ack = await json(
      call('alice', 'POST', `/runs/${runId}/controls`, {
        control_id: `approve-${runId}`,
        command: 'approve',
        request_id: request.request_id,
        subject_digest: request.subject.digest,
      }),
    );
    expect(ack.ack).toBe('applied');
    const done = await settle(runId);
    expect(done.record.status).toBe('completed');
    const kinds = done.events.map((e) => e.kind);
    expect(kinds.indexOf('request_opened')).toBeLessThan(kinds.indexOf('request_resolved'));
    expect(kinds.indexOf('request_resolved')).toBeLessThan(kinds.indexOf('tool_result'));
    expect(toolResults(done.events)[0]?.status).toBe('succeeded');
    // bob is not in staff: the same tool runs for him without approval.
    const bobs = await create('bob', '/r/remote');
    expect((await settle(bobs.body.run.run_id)).record.status).toBe('completed');
  });
});

describe('agents', () => {
  const helper = 'functions:/agents/helper';
  const staffAgent = 'functions:/agents/staff';
  const noTools = 'functions:/agents/no-tools';

  beforeAll(async () => {
    await publish('tools', httpTool('remote_lookup', '1.0.0'));
    await publish('agents', { agent_id: helper, acts_for: { users: ['alice'] }, tools: ['remote_lookup'] });
    await publish('agents', { agent_id: staffAgent, acts_for: { groups: ['staff'] }, tools: ['*'] });
    await publish('agents', { agent_id: noTools, acts_for: { users: ['alice'] }, tools: [] });
  });

  it('creates a run as a registered agent for a user it may act for, by id or by group', async () => {
    const byId = await create('alice', '/r/remote', { as_agent: helper });
    expect(byId.status).toBe(201);
    expect(byId.body.run.principal).toEqual({
      kind: 'agent',
      id: helper,
      on_behalf_of: 'alice',
      groups: ['staff'],
    });
    const byGroup = await create('alice', '/r/remote', { as_agent: staffAgent });
    expect(byGroup.status).toBe(201);
  });

  it('refuses as_agent for an unregistered agent or a user the agent may not act for, and writes nothing', async () => {
    const subject = uniqueSubject();
    const attempts = [
      await call('bob', 'POST', '/runs', {
        subject,
        reducer: { function_path: '/r/remote' },
        input: 'x',
        as_agent: helper,
      }),
      await call('bob', 'POST', '/runs', {
        subject,
        reducer: { function_path: '/r/remote' },
        input: 'x',
        as_agent: staffAgent,
      }),
      await call('alice', 'POST', '/runs', {
        subject,
        reducer: { function_path: '/r/remote' },
        input: 'x',
        as_agent: 'functions:/agents/unknown',
      }),
    ];
    for (const response of attempts) {
      expect(response.status).toBe(403);
      expect(((await response.json()) as { code: string }).code).toBe('agent_not_allowed');
    }
    expect(await runtime.store.findBySubject(subject)).toBeNull();
  });

  it('runs an agent tool call only when both the agent and the user it acts for are allowed it', async () => {
    // Allowed on both sides: the tool sees the agent principal acting for alice, never system.
    const both = await create('alice', '/r/remote', { as_agent: helper });
    const allowed = await settle(both.body.run.run_id);
    expect(toolResults(allowed.events)[0]?.status).toBe('succeeded');
    expect(calls.at(-1)?.principal).toMatchObject({ kind: 'agent', id: helper, on_behalf_of: 'alice' });

    // The agent lacks the tool right: denied, whatever the user may do.
    const agentLacks = await create('alice', '/r/remote', { as_agent: noTools });
    expect(toolResults((await settle(agentLacks.body.run.run_id)).events)[0]).toMatchObject({
      error_class: 'permission_denied',
      diagnostics: [expect.objectContaining({ code: 'agent_tool_not_allowed' })],
    });

    // The user is denied the tool by policy: the agent acting for her is denied too.
    await publish('policy', {
      rules: [{ effect: 'deny', tools: ['remote_lookup'], principal_ids: ['alice'], code: 'alice_blocked' }],
    });
    const userDenied = await create('alice', '/r/remote', { as_agent: helper });
    expect(toolResults((await settle(userDenied.body.run.run_id)).events)[0]).toMatchObject({
      diagnostics: [expect.objectContaining({ code: 'alice_blocked' })],
    });

    // The agent principal is denied by policy: the user's own rights do not lift that.
    await publish('policy', {
      rules: [{ effect: 'deny', tools: ['remote_lookup'], principal_kinds: ['agent'], code: 'no_agents' }],
    });
    const agentDenied = await create('alice', '/r/remote', { as_agent: helper });
    expect(toolResults((await settle(agentDenied.body.run.run_id)).events)[0]).toMatchObject({
      diagnostics: [expect.objectContaining({ code: 'no_agents' })],
    });
    const aliceHerself = await create('alice', '/r/remote');
    expect(toolResults((await settle(aliceHerself.body.run.run_id)).events)[0]?.status).toBe('succeeded');
  });

  it('allows on_behalf_of only to system callers, and checks the agent against the user named', async () => {
    const byUser = await create('bob', '/r/remote', { on_behalf_of: 'alice' });
    expect(byUser.status).toBe(403);
    expect(byUser.body.code).toBe('unauthorized');
    const bySystem = await create('system', '/r/remote', { on_behalf_of: 'alice' });
    expect(bySystem.status).toBe(201);
    expect(bySystem.body.run.principal).toEqual({ kind: 'user', id: 'alice' });
    const agentForAlice = await create('system', '/r/remote', { on_behalf_of: 'alice', as_agent: helper });
    expect(agentForAlice.status).toBe(201);
    expect(agentForAlice.body.run.principal).toEqual({ kind: 'agent', id: helper, on_behalf_of: 'alice' });
    const agentForBob = await create('system', '/r/remote', { on_behalf_of: 'bob', as_agent: helper });
    expect(agentForBob.status).toBe(403);
    expect(agentForBob.body.code).toBe('agent_not_allowed');
  });

  it('versions agents like every registry: a changed agent is a new version, the same one is not', async () => {
    const id = `functions:/agents/${randomUUID()}`;
    const first = await publish('agents', { agent_id: id, acts_for: { users: ['bob'] }, tools: [] });
    const same = await publish('agents', { agent_id: id, acts_for: { users: ['bob'] }, tools: [] });
    const changed = await publish('agents', { agent_id: id, acts_for: { users: ['bob'] }, tools: ['*'] });
    expect([first.status, same.status, changed.status]).toEqual([201, 200, 201]);
    expect([first.body.version, same.body.version, changed.body.version]).toEqual(['1', '1', '2']);
    const entry = await json<{ versions: string[] }>(
      call('admin', 'GET', `/admin/agents/entry?name=${encodeURIComponent(id)}`),
    );
    expect(entry.versions).toEqual(['1', '2']);
  });
});
