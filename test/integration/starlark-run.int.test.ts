/**
 * A Starlark reducer drives real runs through the engine against DynamoDB Local, fauxqs SQS and
 * S3: the Starlark guide's example (examples/reducers/one-tool.star) calls a tool that needs an
 * approval, waits holding no lease, runs the tool once approved and completes; a Starlark
 * reducer that loops forever pauses the run with reducer_unavailable.
 * docs/contracts/run-lifecycle.md, "Deterministic by policy"; docs/contracts/reducer.md,
 * "Validation" (reducer_unavailable).
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { builtInFunctions, createRuntime, type Runtime } from '../../lib/runtime.ts';
import {
  createSandboxReducerHost,
  hashArtifactBytes,
  type SandboxReducerHost,
} from '../../lib/sandbox/index.ts';
import { alice, uniqueSubject } from '../support/engine.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
const EXAMPLE = new Uint8Array(
  await readFile(new URL('../../examples/reducers/one-tool.star', import.meta.url)),
);
const charges: string[] = [];
const functions = builtInFunctions();
// A loaded test machine stretches a call; the step budget, not the clock, stops the loop below.
const reducers: SandboxReducerHost = createSandboxReducerHost({
  registry: functions,
  limits: { timeoutMs: 10_000 },
});
let runtime: Runtime;

afterAll(async () => {
  runtime?.close();
  clients.destroy();
  await reducers.close();
});

async function startRuntime(): Promise<Runtime> {
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `starlark-${randomUUID().slice(0, 12)}` }),
  );
  return createRuntime({
    endpoints: local,
    tableName: local.tableName,
    queueUrl: QueueUrl ?? '',
    bucketName: local.bucketName,
    functions,
    reducers,
    registerTools: (registry) => {
      registry.register({
        name: 'charge',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: true, replay_safe: true, approval: 'always' },
        handler: {
          kind: 'module',
          fn: async (args, ctx) => {
            charges.push(`${String(args.amount)}:${ctx.idempotency_key}`);
            return { charged: args.amount };
          },
        },
      });
    },
  });
}

describe('a Starlark reducer driving runs through the engine', () => {
  it('calls a tool, waits for its approval, runs it once approved and completes', async () => {
    runtime ??= await startRuntime();
    const path = `/agents/${randomUUID()}/one-tool`;
    await runtime.functions.put(path, 'star', EXAMPLE);

    const { run } = await runtime.engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: path },
        input: 'charge 7',
        context: { tool: 'charge', args: { amount: 7 }, mutating: true },
      },
      alice,
    );
    expect(run.reducer).toEqual({ function_path: path, artifact_hash: hashArtifactBytes(EXAMPLE) });
    await runtime.engine.stepRun(run.run_id);
    const waiting = await runtime.engine.getRun(run.run_id, alice);
    const approval = waiting.open_requests.find((r) => r.kind === 'approval');
    if (approval?.kind !== 'approval') throw new Error(`no approval opened: ${JSON.stringify(waiting)}`);
    expect(waiting).toMatchObject({ status: 'waiting', lease: null });
    expect(charges).toEqual([]);

    const ack = await runtime.engine.applyControl(
      run.run_id,
      {
        control_id: 'approve-1',
        command: 'approve',
        request_id: approval.request_id,
        subject_digest: approval.subject.digest,
      },
      alice,
    );
    expect(ack.ack).toBe('applied');
    await runtime.engine.stepRun(run.run_id);

    const done = await runtime.engine.getRun(run.run_id, alice);
    expect(done).toMatchObject({ status: 'completed', summary: 'charge answered {"charged":7}' });
    const events = await runtime.engine.readEvents(run.run_id, alice, 0, 500);
    const result = events.find((e) => e.kind === 'tool_result');
    expect(charges).toEqual([`7:${result?.operation_id}`]);
    expect(events.filter((e) => e.kind === 'reducer_answered').length).toBeGreaterThanOrEqual(3);
  });

  it('pauses a run whose Starlark reducer loops forever with reducer_unavailable', async () => {
    runtime ??= await startRuntime();
    const path = `/agents/${randomUUID()}/spin`;
    const spin = 'def reduce(request):\n    for i in range(1 << 40):\n        pass\n    return None\n';
    await runtime.functions.put(path, 'star', new TextEncoder().encode(spin));

    const { run } = await runtime.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: path }, input: 'spin' },
      alice,
    );
    await runtime.engine.stepRun(run.run_id);

    expect(await runtime.engine.getRun(run.run_id, alice)).toMatchObject({
      status: 'paused',
      pause_reason: 'reducer_unavailable',
    });
  });
});
