/**
 * Every command `agent-runs runs get` prints under "waiting:" works when pasted. Runs are brought,
 * on the local stack, into each state the explanation covers (an approval, its rejection, a
 * question, a result under a key, a child run waiting on an approval, a child stopped by max_depth,
 * a budget pause, a user pause, a changed reducer); the test reads `runs get` with the real CLI,
 * pastes each printed command into `sh -c` (with `agent-runs` on PATH, as `npm link` or the client
 * package would put it), and checks that the run moves on.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import {
  DEFAULT_MODEL_TURN_FUNCTION,
  DELEGATE_TOOL,
  type ModelTurnInput,
  type ModelTurnOutput,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { registerSampleTools } from '../../lib/local/sample-tools.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { AGENT_LOOP_ARTIFACT_URL, AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { untilRun } from '../support/http-runs.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const bin = mkdtempSync(join(tmpdir(), 'agent-runs-bin-'));
let stack: LocalStack;
let client: AgentRunsClient;

const call = (name: string, args: Record<string, unknown> = {}) => ({
  message: {},
  tool_calls: [{ call_id: `c-${name}`, name, args }],
  finish_reason: 'tool_calls' as const,
  usage: { input_tokens: 10, output_tokens: 5 },
});
const say = (text: string) => ({
  message: { text },
  tool_calls: [],
  finish_reason: 'stop' as const,
  usage: { input_tokens: 10, output_tokens: 5 },
});

/** The scripted model: the scenario is the subject path's first segment; a child's path holds /children/. */
async function scriptedModel(input: ModelTurnInput): Promise<ModelTurnOutput> {
  const [, scenario] = input.subject.path.split('/');
  const child = input.subject.path.includes('/children/');
  if (input.request.tool_results.length > 0) return say(`done: ${scenario}`);
  switch (scenario) {
    case 'approve':
    case 'reject':
    case 'changed':
      return call('charge', { amount: 7 });
    case 'callback':
      return call('wait_for_callback');
    case 'child':
      return child ? call('charge', { amount: 9 }) : call('delegate', { input: 'charge 9' });
    case 'deep':
      return call('delegate', { input: 'go deeper' });
    case 'budget':
      return call('echo', { n: 1 });
    default:
      return say('Which one do you mean?');
  }
}

const TOOLS = [
  { name: 'charge', schema: { type: 'object' }, mutating: true, replay_safe: false },
  { name: 'wait_for_callback', schema: { type: 'object' }, mutating: false, replay_safe: true },
  { name: 'echo', schema: { type: 'object' }, mutating: false, replay_safe: true },
  {
    name: 'delegate',
    function_path: DELEGATE_TOOL,
    schema: { type: 'object' },
    mutating: false,
    replay_safe: true,
  },
];

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    heartbeatMs: 300,
    sweepIntervalMs: 1_000,
    consoleDir: false,
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: (input) => scriptedModel(input) },
    registerTools(registry) {
      registerSampleTools(registry);
      registry.register({
        name: 'charge',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: true, replay_safe: false, approval: 'always', risk: 'high' },
        handler: { kind: 'module', fn: async (args) => ({ charged: args.amount }) },
      });
    },
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
  // `agent-runs` on PATH, as a pasted line expects it.
  const shim = join(bin, 'agent-runs');
  writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin/agent-runs.ts')}" "$@"\n`);
  chmodSync(shim, 0o755);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(bin, { recursive: true, force: true });
});

function withoutNpmInvocation(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { npm_command: _command, npm_lifecycle_event: _event, ...rest } = env;
  return rest;
}

/** Runs one shell line as a person would paste it; resolves with its output, rejects on a non-zero exit. */
async function paste(line: string): Promise<string> {
  const { stdout } = await run('sh', ['-c', line], {
    cwd: bin,
    env: {
      // Not under npm (`npm test` sets these): the hints then start with a plain `agent-runs`.
      ...withoutNpmInvocation(process.env),
      PATH: `${bin}:${process.env.PATH}`,
      AGENT_RUNS_URL: stack.url,
      AGENT_RUNS_TOKEN: stack.token,
    },
  });
  return stdout;
}

/** The commands `agent-runs runs get RUN` prints under "waiting:", in order. */
async function hints(runId: string): Promise<string[]> {
  const text = await paste(`agent-runs runs get ${runId}`);
  return [...text.matchAll(/^\s+\$ (agent-runs .+)$/gm)].map((m) => m[1] ?? '');
}

async function create(scenario: string, extra: Record<string, unknown> = {}): Promise<string> {
  const { run: created } = await client.createRun({
    subject: { workspace: 'hints', path: `/${scenario}/${randomUUID()}` },
    reducer: { function_path: AGENT_LOOP_PATH },
    input: scenario,
    context: { mode: 'task', tools: TOOLS },
    ...extra,
  });
  return created.run_id;
}

const until = (runId: string, done: (r: RunRecord) => boolean) => untilRun(client, runId, done, 30_000);
const resting = (r: RunRecord) => r.status === 'waiting' || r.status === 'paused';

describe('the hints of agent-runs runs get, pasted', { timeout: 120_000 }, () => {
  it('approves an approval', async () => {
    const id = await create('approve');
    await until(id, resting);
    const [approve] = await hints(id);
    expect(approve).toMatch(new RegExp(`^agent-runs approve ${id} \\S+ --digest \\S+$`));
    expect(await paste(approve ?? '')).toMatch(/^applied/);
    await until(id, (r) => r.status === 'completed');
  });

  it('rejects an approval', async () => {
    const id = await create('reject');
    await until(id, resting);
    const [, reject] = await hints(id);
    expect(reject).toMatch(/--reject --reason 'not now'$/);
    expect(await paste(reject ?? '')).toMatch(/^applied/);
    await until(id, (r) => r.status === 'completed' && r.open_requests.length === 0);
  });

  it('answers a question', async () => {
    const { run: created } = await client.createRun({
      subject: { workspace: 'hints', path: `/ask/${randomUUID()}` },
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'hello',
      context: { mode: 'conversation' },
    });
    const asked = await until(created.run_id, resting);
    const commands = await hints(created.run_id);
    expect(commands).toEqual([
      `agent-runs answer ${created.run_id} ${asked.open_requests[0]?.request_id} '<your answer>'`,
    ]);
    expect(await paste(commands[0] ?? '')).toMatch(/^applied/);
    // Answered: the next question is another request.
    await until(created.run_id, (r) => r.open_requests[0]?.request_id !== asked.open_requests[0]?.request_id);
  });

  it('resumes a paused run, then delivers the result it waits for under its key', async () => {
    const id = await create('callback');
    await until(id, resting);
    await client.pause(id, { reason: 'lunch' });
    await until(id, (r) => r.status === 'paused');
    expect(await hints(id)).toEqual([`agent-runs resume ${id}`]);
    expect(await paste(`agent-runs resume ${id}`)).toMatch(/^applied/);
    await until(id, (r) => r.status === 'waiting');
    const [deliver] = await hints(id);
    expect(deliver).toMatch(/^agent-runs deliver callback:\S+ '\{"ok":true\}'$/);
    expect(await paste(deliver ?? '')).toMatch(/^delivered to /);
    await until(id, (r) => r.status === 'completed');
  });

  it('shows what a child run waits for, and its approval moves the parent on', async () => {
    const id = await create('child');
    const parent = await until(id, (r) => r.status === 'waiting');
    const childId = parent.live_children[0] ?? '';
    await until(childId, resting);
    const commands = await hints(id);
    expect(commands.slice(0, 2)).toEqual([
      `agent-runs runs get ${childId}`,
      `agent-runs stop ${childId} --reason 'the parent stops waiting'`,
    ]);
    // The child's own reason, nested: its approval.
    expect(commands[2]).toMatch(new RegExp(`^agent-runs approve ${childId} `));
    expect(await paste(commands[0] ?? '')).toContain('waiting for approval');
    expect(await paste(commands[2] ?? '')).toMatch(/^applied/);
    await until(id, (r) => r.status === 'completed');
  });

  it('stops a child paused by max_depth, which it cannot raise, and the parent goes on', async () => {
    const id = await create('deep', { budgets: { max_depth: 1 } });
    const parent = await until(id, (r) => r.status === 'waiting');
    const childId = parent.live_children[0] ?? '';
    await until(childId, (r) => r.status === 'paused');
    const commands = await hints(id);
    const stop = `agent-runs stop ${childId} --reason max_depth`;
    expect(commands).toContain(stop);
    expect(await paste(stop)).toMatch(/^applied/);
    await until(id, (r) => r.status === 'completed');
  });

  it('resumes a run paused by a budget with an increase that covers it', async () => {
    const id = await create('budget', { budgets: { max_turns: 1 } });
    await until(id, (r) => r.status === 'paused');
    const commands = await hints(id);
    expect(commands).toEqual([`agent-runs resume ${id} --budget-increase '{"max_turns":1}'`]);
    expect(await paste(commands[0] ?? '')).toMatch(/^applied/);
    await until(id, (r) => r.status === 'completed');
  });

  it('resumes a run paused because its reducer changed, accepting the new one', async () => {
    const path = `/test/hints/agent-${randomUUID().slice(0, 8)}`;
    const bytes = new Uint8Array(readFileSync(AGENT_LOOP_ARTIFACT_URL));
    await client.putFunction(path, bytes, 'js');
    const { run: created } = await client.createRun({
      subject: { workspace: 'hints', path: `/changed/${randomUUID()}` },
      reducer: { function_path: path },
      input: 'changed',
      context: { mode: 'task', tools: TOOLS },
    });
    const id = created.run_id;
    const waiting = await until(id, resting);
    await client.putFunction(path, new Uint8Array(Buffer.concat([bytes, Buffer.from('\n// v2\n')])), 'js');
    const request = waiting.open_requests[0];
    if (request?.kind !== 'approval') throw new Error('expected an approval');
    await client.approve(id, request.request_id, request.subject.digest);
    await until(id, (r) => r.status === 'paused');
    const commands = await hints(id);
    expect(commands).toEqual([
      `agent-runs reducers check --path ${path} --run ${id}`,
      `agent-runs resume ${id} --accept-reducer-change`,
    ]);
    // v2 differs by a comment only: the check finds every decision identical.
    expect(await paste(commands[0] ?? '')).toMatch(/1 runs: 1 identical, 0 diverged/);
    expect(await paste(commands[1] ?? '')).toMatch(/^applied/);
    await until(id, (r) => r.status === 'completed');
  });
});
