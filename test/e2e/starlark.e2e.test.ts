/**
 * Starlark reducers end to end over HTTP, as a user of `npm start` would use them: the Starlark
 * guide's example (examples/reducers/one-tool.star) registered with `PUT /functions/...` drives a run
 * through a tool call, its approval and completion; a Starlark reducer that loops forever, or
 * that names a builtin the sandbox does not provide, pauses its run with reducer_unavailable;
 * a run whose artifact is replaced (PUT again) pauses with reducer_changed.
 * docs/guides/local-stack.md, "How it stands in for AWS"; docs/contracts/reducer.md, "Validation".
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { hashArtifactBytes } from '../../lib/sandbox/index.ts';
import { untilRun } from '../support/http-runs.ts';

const EXAMPLE = new Uint8Array(
  await readFile(new URL('../../examples/reducers/one-tool.star', import.meta.url)),
);
const charges: number[] = [];
let stack: LocalStack;
let client: AgentRunsClient;

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    heartbeatMs: 300,
    sweepIntervalMs: 1_000,
    // A loaded test machine stretches a call; the step budget, not the clock, stops the loop below.
    sandboxLimits: { timeoutMs: 10_000 },
    registerTools(registry) {
      registry.register({
        name: 'charge',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: true, replay_safe: false, approval: 'always', risk: 'high' },
        handler: {
          kind: 'module',
          fn: async (args) => {
            charges.push(Number(args.amount));
            return { charged: args.amount };
          },
        },
      });
    },
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const subject = () => ({ workspace: 'e2e', path: `/starlark/${randomUUID()}` });
const newPath = (name: string) => `/agents/${randomUUID()}/${name}`;

const until = (runId: string, done: (run: RunRecord) => boolean, timeoutMs?: number) =>
  untilRun(client, runId, done, timeoutMs ?? 30_000);

/** Creates a run of the one-tool example calling `charge`, and waits for its approval request. */
async function waitingForApproval(path: string) {
  const { run } = await client.createRun({
    subject: subject(),
    reducer: { function_path: path },
    input: 'charge 42',
    context: { tool: 'charge', args: { amount: 42 }, mutating: true },
  });
  const waiting = await until(run.run_id, (r) => r.status === 'waiting');
  const request = waiting.open_requests[0];
  if (request?.kind !== 'approval') throw new Error(`no approval request: ${JSON.stringify(waiting)}`);
  return { run: waiting, request };
}

describe('Starlark reducers over the local stack', () => {
  it('registers the example with PUT /functions and drives a run: tool call, approval, completion', async () => {
    const path = newPath('one-tool');
    const artifact = await client.putFunction(path, EXAMPLE, 'star');
    expect(artifact).toEqual({
      function_path: path,
      kind: 'star',
      hash: hashArtifactBytes(EXAMPLE),
      size: EXAMPLE.byteLength,
    });

    const { run, request } = await waitingForApproval(path);
    expect(run.reducer).toEqual({ function_path: path, artifact_hash: artifact.hash });
    expect(run.lease).toBeNull();
    expect(charges).not.toContain(42);

    const ack = await client.approve(run.run_id, request.request_id, request.subject.digest);
    expect(ack.ack).toBe('applied');
    const done = await until(run.run_id, (r) => r.status === 'completed');

    expect(done).toMatchObject({ summary: 'charge answered {"charged":42}' });
    expect(charges.filter((amount) => amount === 42)).toHaveLength(1);
    const kinds = (await client.events(run.run_id, { limit: 1000 })).events.map((e) => e.kind);
    expect(kinds).toEqual(
      expect.arrayContaining(['request_opened', 'request_resolved', 'tool_result', 'run_completed']),
    );
  });

  it('pauses with reducer_unavailable a reducer that loops forever or names a builtin the sandbox lacks', async () => {
    const spin = newPath('spin');
    const missing = newPath('missing-builtin');
    await client.putFunction(
      spin,
      new TextEncoder().encode('def reduce(request):\n    for i in range(1 << 40):\n        pass\n'),
      'star',
    );
    await client.putFunction(
      missing,
      new TextEncoder().encode('def reduce(request):\n    return {"now": now()}\n'),
      'star',
    );

    const runs = await Promise.all(
      [spin, missing].map((function_path) =>
        client.createRun({ subject: subject(), reducer: { function_path }, input: 'go' }),
      ),
    );
    const paused = await Promise.all(runs.map(({ run }) => until(run.run_id, (r) => r.status === 'paused')));

    expect(paused.map((r) => (r.status === 'paused' ? r.pause_reason : r.status))).toEqual([
      'reducer_unavailable',
      'reducer_unavailable',
    ]);
  });

  it('pauses with reducer_changed a run whose artifact is replaced by a second PUT', async () => {
    const path = newPath('replaced');
    await client.putFunction(path, EXAMPLE, 'star');
    const { run, request } = await waitingForApproval(path);
    const replaced = await client.putFunction(
      path,
      new TextEncoder().encode(`${new TextDecoder().decode(EXAMPLE)}\n# v2\n`),
      'star',
    );
    expect(replaced.hash).not.toBe(run.reducer?.artifact_hash);

    await client.approve(run.run_id, request.request_id, request.subject.digest);
    const paused = await until(run.run_id, (r) => r.status === 'paused');

    expect(paused).toMatchObject({ pause_reason: 'reducer_changed' });
  });
});
