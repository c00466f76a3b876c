/**
 * `POST /admin/reducers/check` over the HTTP API: the airline replay runs on
 * the memory engine with the default agent reducer; the route checks artifacts against those
 * runs, read server-side, for an admin only, bounded in runs.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRunLog } from '../../lib/engine/upgrade/reducer-check.ts';
import { deliveriesOf } from '../../lib/engine/upgrade/run-at-delivery.ts';
import { exportRunLog, parseRunLog, type RunLog } from '../../lib/engine/upgrade/run-log.ts';
import { createHttpApp, type HttpApp } from '../../lib/http/app.ts';
import { anyOf, bearerTokenAuth } from '../../lib/http/auth.ts';
import { engineLogReader } from '../../lib/http/check-runs.ts';
import { AGENT_LOOP_PATH, readAgentLoopSource } from '../../lib/reducers/index.ts';
import { runReplay } from '../../lib/replay/run-replay.ts';
import { builtInFunctions } from '../../lib/runtime.ts';
import { createCheckHost } from '../../lib/sandbox/check-host.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';
import { alice } from '../support/hosts.ts';
import { type MemoryReplayStack, memoryReplayStack } from '../support/memory-replay-stack.ts';

const CONVERSATIONS = 3;
const ADMIN = 'admin-token';
const USER = 'user-token';
const encode = (text: string) => new TextEncoder().encode(text);
const base64 = (text: string) => Buffer.from(encode(text)).toString('base64');

/** The agent loop, but every answer to a tool_result that moves the state also writes a checkpoint. */
function withCheckpointOnToolResult(source: string): string {
  const renamed = source.replace('export function reduce(request) {', 'function reduceV1(request) {');
  expect(renamed).not.toBe(source);
  return `${renamed}
export function reduce(request) {
  const answer = reduceV1(request);
  if (request.event.kind === 'tool_result' && answer.refused == null && answer.state_rev !== request.state_rev) {
    answer.effects = [...answer.effects, { effect_id: answer.state_rev + ':' + answer.effects.length, kind: 'checkpoint', reason: 'upgrade' }];
  }
  return answer;
}
`;
}

let stack: MemoryReplayStack;
let app: HttpApp;
let upgradedHash: string;
const logs: RunLog[] = [];
const registry = builtInFunctions();

beforeAll(async () => {
  stack = memoryReplayStack();
  const report = await runReplay({
    file: join(TAU_BENCH_DIR, 'trajectories.json'),
    toolsFile: join(TAU_BENCH_DIR, 'tools.json'),
    limit: CONVERSATIONS,
    concurrency: 1,
    startStack: stack.start,
    out: () => {},
  });
  expect(report.conversations.filter((c) => !c.identical)).toEqual([]);
  const { engine } = stack.engine();
  for (const c of report.conversations) {
    const exported = await exportRunLog(engineLogReader(engine, alice), c.run_id as string, 0);
    logs.push(parseRunLog(JSON.parse(JSON.stringify(exported))));
  }
  upgradedHash = (
    await registry.put('/agents/upgraded', 'js', encode(withCheckpointOnToolResult(readAgentLoopSource())))
  ).hash;
  app = createHttpApp({
    engine,
    functions: registry,
    tools: { list: async () => [] },
    auth: anyOf(
      bearerTokenAuth(ADMIN, alice.principal),
      bearerTokenAuth(USER, alice.principal, { admin: false }),
    ),
    log: () => {},
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

async function check(token: string, body: unknown) {
  const res = await app.request('/admin/reducers/check', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('POST /admin/reducers/check', () => {
  it('refuses a caller without admin rights with 403 unauthorized, before reading the body', async () => {
    const valid = {
      artifact: { kind: 'js', bytes_base64: base64(readAgentLoopSource()) },
      function_path: AGENT_LOOP_PATH,
    };
    expect(await check(USER, valid)).toMatchObject({ status: 403, body: { code: 'unauthorized' } });
    expect(await check(USER, { nonsense: true })).toMatchObject({
      status: 403,
      body: { code: 'unauthorized' },
    });
  });

  it('reports the default reducer identical on the runs bound to its path, at most limit runs', async () => {
    const all = await check(ADMIN, {
      artifact: { kind: 'js', bytes_base64: base64(readAgentLoopSource()) },
      function_path: AGENT_LOOP_PATH,
    });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({
      artifact: { kind: 'js' },
      totals: { runs: CONVERSATIONS, identical: CONVERSATIONS, diverged: 0, skipped: 0 },
      truncated: false,
    });
    const ids = (all.body.runs as { run_id: string }[]).map((r) => r.run_id).sort();
    expect(ids).toEqual(logs.map((l) => l.run.run_id).sort());
    const bounded = await check(ADMIN, {
      artifact: { kind: 'js', bytes_base64: base64(readAgentLoopSource()) },
      function_path: AGENT_LOOP_PATH,
      limit: 2,
    });
    expect(bounded).toMatchObject({
      status: 200,
      body: { totals: { runs: 2, identical: 2 }, truncated: true },
    });
  });

  it('reports a published artifact at the first divergent delivery, as the local check does', async () => {
    const log = logs.find((l) => deliveriesOf(l.run, l.events).some((d) => d.event.kind === 'tool_result'));
    if (log === undefined) throw new Error('no run with a tool result');
    const host = createCheckHost({
      kind: 'js',
      bytes: encode(withCheckpointOnToolResult(readAgentLoopSource())),
    });
    const expected = await checkRunLog(host, log).finally(() => host.close());
    expect(expected.result).toBe('diverged');
    const res = await check(ADMIN, {
      artifact: { function_path: '/agents/upgraded', hash: upgradedHash },
      run_ids: [log.run.run_id],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      artifact: { kind: 'js', hash: upgradedHash },
      runs: [expected],
      totals: { runs: 1, identical: 0, diverged: 1, skipped: 0, deliveries: expected.deliveries },
      truncated: false,
    });
  });

  it('answers 409 artifact_hash_mismatch for a stale hash and 404 for a path with no artifact', async () => {
    const runIds = [logs[0]?.run.run_id];
    const stale = await check(ADMIN, {
      artifact: { function_path: '/agents/upgraded', hash: '0'.repeat(64) },
      run_ids: runIds,
    });
    expect(stale).toMatchObject({
      status: 409,
      body: { code: 'artifact_hash_mismatch', details: { hash: upgradedHash } },
    });
    const missing = await check(ADMIN, {
      artifact: { function_path: '/agents/none', hash: upgradedHash },
      run_ids: runIds,
    });
    expect(missing).toMatchObject({ status: 404, body: { code: 'function_not_found' } });
    // Without a hash: the artifact published now, named in the answer.
    const current = await check(ADMIN, { artifact: { function_path: '/agents/upgraded' }, run_ids: runIds });
    expect(current).toMatchObject({ status: 200, body: { artifact: { hash: upgradedHash } } });
  });

  it('answers 400 validation_failed unless exactly one of run_ids and function_path is given', async () => {
    const artifact = { kind: 'js', bytes_base64: base64(readAgentLoopSource()) };
    for (const body of [
      { artifact },
      { artifact, run_ids: ['r'], function_path: AGENT_LOOP_PATH },
      { artifact, function_path: AGENT_LOOP_PATH, limit: 51 },
    ]) {
      expect(await check(ADMIN, body)).toMatchObject({ status: 400, body: { code: 'validation_failed' } });
    }
  });

  it('answers 404 run_not_found for a named run the store does not hold', async () => {
    const res = await check(ADMIN, {
      artifact: { kind: 'js', bytes_base64: base64(readAgentLoopSource()) },
      run_ids: ['run_does_not_exist'],
    });
    expect(res).toMatchObject({ status: 404, body: { code: 'run_not_found' } });
  });
});
