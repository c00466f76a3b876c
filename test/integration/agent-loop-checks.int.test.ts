/**
 * The default agent reducer's opt-in checks through the engine, on DynamoDB Local and fauxqs,
 * with the reducer artifact in the sandbox and a scripted model: plan approval → proceeding →
 * verified completion, and the no-progress guard ending a run blocked with a capability gap.
 */
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import type { ModelTurnOutput } from '../../lib/contracts/index.ts';
import type { ModelTurnFunction } from '../../lib/models/types.ts';
import { planDigest } from '../../lib/reducers/agent-loop/plan.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { createRuntime } from '../../lib/runtime.ts';
import type { ToolRegistry } from '../../lib/tools/index.ts';
import { alice, uniqueSubject } from '../support/engine.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
afterAll(() => clients.destroy());

/** A model that plays a fixed script of answers, one per turn, recording the tool messages it was shown. */
function scripted(turns: ModelTurnOutput[], shown: string[] = []): ModelTurnFunction {
  let n = 0;
  return async (_input, context) => {
    for (const m of context.messages) if (m.role === 'tool') shown.push(`${n}:${m.name}:${m.content}`);
    const next = turns[n];
    n += 1;
    return next ?? { error_class: 'recording_exhausted', message: 'no more turns', retryable: false };
  };
}

const calls = (...list: [string, string, Record<string, unknown>][]): ModelTurnOutput => ({
  message: { text: null },
  tool_calls: list.map(([call_id, name, args]) => ({ call_id, name, args })),
  finish_reason: 'tool_calls',
  usage: { input_tokens: 10, output_tokens: 5 },
});
const reply = (text: string): ModelTurnOutput => ({
  message: { text },
  tool_calls: [],
  finish_reason: 'stop',
  usage: { input_tokens: 10, output_tokens: 5 },
});

async function runtimeWith(model: ModelTurnFunction, registerTools: (registry: ToolRegistry) => void) {
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `loop-${randomUUID().slice(0, 12)}` }),
  );
  return createRuntime({
    endpoints: local,
    tableName: local.tableName,
    queueUrl: QueueUrl ?? '',
    bucketName: local.bucketName,
    registerTools,
    modelFunctions: { '/test/scripted': model },
  });
}

const DOC = { workspace: 'content', path: `/articles/${randomUUID().slice(0, 8)}` };
const REV = { value: 'r1', alg: 'raisin.node/1' };
const PLAN = [
  { key: 'write', title: 'Write the article' },
  { key: 'check', title: 'Check it reads back' },
];

describe('the default agent reducer with plan approval and verified completion', () => {
  it('waits for the plan approval, refuses a stale digest, proceeds once approved and completes with verified evidence', async () => {
    // Prepare: a writer tool that reports its primary artifact, and a verifier that re-reads it.
    const written: string[] = [];
    const shown: string[] = [];
    const model = scripted(
      [
        calls(['p1', 'propose_plan', { items: PLAN }]),
        calls(
          ['w1', 'write_doc', { text: 'hello' }],
          ['u1', 'update_plan', { key: 'write', status: 'completed' }],
        ),
        calls(['u2', 'update_plan', { key: 'check', status: 'completed' }]),
        reply('The article is written.'),
      ],
      shown,
    );
    const runtime = await runtimeWith(model, (registry) => {
      registry.register({
        name: 'write_doc',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: true, replay_safe: true },
        handler: {
          kind: 'module',
          fn: async (args, ctx) => {
            written.push(String(args.text));
            return {
              envelope: 'raisin.tool-result/1',
              operation_id: ctx.operation_id,
              status: 'succeeded',
              writes: [{ locator: DOC, action: 'created', revision: REV }],
              artifact_refs: [{ kind: 'node', locator: DOC, revision: REV, role: 'primary' }],
              payload: 'written',
            };
          },
        },
      });
      registry.register({
        name: 'recheck_doc',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true },
        handler: {
          kind: 'module',
          fn: async (_args, ctx) => ({
            envelope: 'raisin.tool-result/1',
            operation_id: ctx.operation_id,
            status: 'succeeded',
            reads: [{ read_id: `content:${DOC.path}`, locator: DOC, revision: REV }],
            evidence: [
              { kind: 'read_back', subject: { locator: DOC, revision: REV }, ok: written.length === 1 },
            ],
            payload: { found: written.length === 1 },
          }),
        },
      });
    });
    try {
      const { run } = await runtime.engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: { function_path: AGENT_LOOP_PATH },
          input: 'write the article',
          context: {
            mode: 'task',
            plan: 'approve',
            verifier_tool: 'recheck_doc',
            tools: [
              { name: 'write_doc', schema: { type: 'object' }, mutating: true, replay_safe: true },
              { name: 'recheck_doc', schema: { type: 'object' }, mutating: false },
            ],
          },
          executor_config: { model_turn_function: '/test/scripted' },
        },
        alice,
      );

      // Act 1: the plan is proposed; the run waits for its approval and nothing is written.
      await runtime.engine.stepRun(run.run_id);
      const waiting = await runtime.engine.getRun(run.run_id, alice);
      expect(waiting.status).toBe('waiting');
      const approval = waiting.open_requests.find((r) => r.kind === 'approval');
      if (approval?.kind !== 'approval') throw new Error('no plan approval opened');
      expect(approval.subject).toMatchObject({
        kind: 'plan',
        digest: planDigest(PLAN),
        digest_alg: 'sha256:rfc8785',
      });
      expect(written).toEqual([]);

      // An approval quoting another digest is rejected and changes nothing.
      const stale = await runtime.engine.applyControl(
        run.run_id,
        {
          control_id: 'stale-1',
          command: 'approve',
          request_id: approval.request_id,
          subject_digest: 'f'.repeat(64),
        },
        alice,
      );
      expect(stale).toMatchObject({ ack: 'rejected', reason: 'digest_mismatch' });
      expect((await runtime.engine.getRun(run.run_id, alice)).status).toBe('waiting');

      // Act 2: approve quoting the plan's digest; the run proceeds to the end.
      const ack = await runtime.engine.applyControl(
        run.run_id,
        {
          control_id: 'ok-1',
          command: 'approve',
          request_id: approval.request_id,
          subject_digest: approval.subject.digest,
        },
        alice,
      );
      expect(ack.ack).toBe('applied');
      await runtime.engine.stepRun(run.run_id);

      // Assess: written once, verified by the verifier tool, completed succeeded.
      const done = await runtime.engine.getRun(run.run_id, alice);
      expect(done).toMatchObject({
        status: 'completed',
        outcome: 'succeeded',
        summary: 'The article is written.',
      });
      expect(written).toEqual(['hello']);
      expect(done.projection?.items.filter((i) => i.key.startsWith('plan:'))).toEqual([
        { key: 'plan:write', title: 'Write the article', status: 'completed' },
        { key: 'plan:check', title: 'Check it reads back', status: 'completed' },
      ]);
      const events = await runtime.engine.readEvents(run.run_id, alice, 0, 500);
      const results = events.filter((e) => e.kind === 'tool_result').map((e) => e.data.tool);
      expect(results).toEqual(['write_doc', 'recheck_doc']);
      // The model heard the approval as the answer to its propose_plan call.
      expect(shown).toContain(
        '1:propose_plan:The plan was approved. Go on with it; report progress with update_plan.',
      );
    } finally {
      runtime.close();
    }
  });

  it('ends a run that makes no progress blocked, with a capability gap', async () => {
    // Prepare: a lookup that always answers the same; the model keeps asking with new args.
    const model = scripted([1, 2, 3, 4, 5, 6].map((n) => calls([`c${n}`, 'lookup', { attempt: n }])));
    let looked = 0;
    const runtime = await runtimeWith(model, (registry) => {
      registry.register({
        name: 'lookup',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true },
        handler: {
          kind: 'module',
          fn: async () => {
            looked += 1;
            return { found: 'nothing new' };
          },
        },
      });
    });
    try {
      const { run } = await runtime.engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: { function_path: AGENT_LOOP_PATH },
          input: 'find the refund',
          objective: 'find the refund of order 9',
          context: {
            mode: 'task',
            no_progress_turns: 2,
            tools: [{ name: 'lookup', schema: { type: 'object' }, mutating: false }],
          },
          executor_config: { model_turn_function: '/test/scripted' },
        },
        alice,
      );

      // Act
      await runtime.engine.stepRun(run.run_id);

      // Assess: the first answer was new, the next two were not; the fourth turn ends the run.
      const done = await runtime.engine.getRun(run.run_id, alice);
      expect(done).toMatchObject({ status: 'completed', outcome: 'blocked' });
      expect(done.status === 'completed' && done.summary).toContain(
        '2 model turn(s) in a row brought no new tool result',
      );
      expect(looked).toBe(3);
      const events = await runtime.engine.readEvents(run.run_id, alice, 0, 500);
      const gap = events.find((e) => e.kind === 'capability_gap');
      expect(gap?.data.gap).toMatchObject({
        requested_outcome: 'find the refund of order 9',
        inspected: { idle_turns: 2, model_turns: 4, tool_calls: 3 },
      });
    } finally {
      runtime.close();
    }
  });
});
