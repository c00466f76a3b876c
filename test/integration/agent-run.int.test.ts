import { randomUUID } from 'node:crypto';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { DELEGATE_TOOL, type ModelTurnOutput } from '../../lib/contracts/index.ts';
import type { ModelTurnFunction } from '../../lib/models/types.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { createRuntime } from '../../lib/runtime.ts';
import { alice, uniqueSubject } from '../support/engine.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
afterAll(() => clients.destroy());

/** A model that plays a fixed script of answers, one per turn, and records what it was shown. */
function scripted(turns: ModelTurnOutput[]): { fn: ModelTurnFunction; seen: string[][] } {
  const seen: string[][] = [];
  const fn: ModelTurnFunction = async (_input, context) => {
    seen.push(context.messages.map((m) => (m.role === 'tool' ? `tool:${m.name}:${m.content}` : m.role)));
    const next = turns[seen.length - 1];
    return next ?? { error_class: 'recording_exhausted', message: 'no more turns', retryable: false };
  };
  return { fn, seen };
}

const call = (id: string, name: string, args: Record<string, unknown>): ModelTurnOutput => ({
  message: { text: null },
  tool_calls: [{ call_id: id, name, args }],
  finish_reason: 'tool_calls',
  usage: { input_tokens: 10, output_tokens: 5 },
});

describe('a run of the default agent reducer in the sandbox, with real tools and a policy gate', () => {
  it('completes through a denied tool and an approved mutating tool', async () => {
    const { QueueUrl } = await clients.sqs.send(
      new CreateQueueCommand({ QueueName: `agent-${randomUUID().slice(0, 12)}` }),
    );
    const executed: string[] = [];
    const model = scripted([
      call('c1', 'wipe_database', {}),
      call('c2', 'cancel_booking', { booking: 'B1' }),
      {
        message: { text: 'Booking B1 is cancelled.' },
        tool_calls: [],
        finish_reason: 'stop',
        usage: { input_tokens: 10, output_tokens: 5 },
      },
    ]);
    const runtime = createRuntime({
      endpoints: local,
      tableName: local.tableName,
      queueUrl: QueueUrl ?? '',
      bucketName: local.bucketName,
      toolPolicy: [{ effect: 'deny', tools: ['wipe_database'], code: 'too_dangerous' }],
      registerTools: (registry) => {
        for (const [name, mutating] of [
          ['wipe_database', true],
          ['cancel_booking', true],
        ] as const) {
          registry.register({
            name,
            version: '1.0.0',
            input_schema: { type: 'object' },
            metadata: { mutating, replay_safe: true, approval: 'when_mutating' },
            handler: {
              kind: 'module',
              fn: async (_args, ctx) => {
                executed.push(`${name}:${ctx.idempotency_key}`);
                return { ok: true };
              },
            },
          });
        }
      },
      modelFunctions: { '/test/scripted': model.fn },
    });
    try {
      const tools = [
        { name: 'wipe_database', schema: { type: 'object' }, mutating: true, replay_safe: true },
        { name: 'cancel_booking', schema: { type: 'object' }, mutating: true, replay_safe: true },
      ];
      const { run } = await runtime.engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: { function_path: AGENT_LOOP_PATH },
          input: 'cancel my booking B1',
          context: { instructions: 'You help.', tools, mode: 'task' },
          executor_config: { model_turn_function: '/test/scripted' },
        },
        alice,
      );
      await runtime.engine.stepRun(run.run_id);
      const waiting = await runtime.engine.getRun(run.run_id, alice);
      expect(waiting.status).toBe('waiting');
      const approval = waiting.open_requests.find((r) => r.kind === 'approval');
      if (approval?.kind !== 'approval') throw new Error('no approval opened');
      expect(executed).toEqual([]);

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

      const done = await runtime.engine.getRun(run.run_id, alice);
      expect(done).toMatchObject({ status: 'completed', summary: 'Booking B1 is cancelled.' });
      const events = await runtime.engine.readEvents(run.run_id, alice, 0, 500);
      // The denied tool never ran; the approved one ran once, keyed on its op_id.
      const cancelled = events.find((e) => e.kind === 'tool_result' && e.data.tool === 'cancel_booking');
      expect(executed).toEqual([`cancel_booking:${cancelled?.operation_id}`]);
      const denied = events.find((e) => e.kind === 'tool_result' && e.data.tool === 'wipe_database');
      expect(denied?.data.envelope).toMatchObject({ status: 'failed', error_class: 'permission_denied' });
      // The model saw the denial as the tool's answer before it went on.
      expect(model.seen[1]?.some((m) => m.startsWith('tool:wipe_database:'))).toBe(true);
    } finally {
      runtime.close();
    }
  });

  it('delegates a sub-task to a child run through the delegate tool and reads its hand-back', async () => {
    // Prepare: the parent's model delegates once, then answers with what the child said; the
    // child's model (same function, another run) answers its task at once.
    const { QueueUrl } = await clients.sqs.send(
      new CreateQueueCommand({ QueueName: `agent-${randomUUID().slice(0, 12)}` }),
    );
    const turns = new Map<string, number>();
    const shown: string[] = [];
    const fn: ModelTurnFunction = async (input, context) => {
      const n = (turns.get(input.run_id) ?? 0) + 1;
      turns.set(input.run_id, n);
      const first = context.messages.find((m) => m.role === 'user')?.content;
      if (first === 'find the cheapest fare') {
        return {
          message: { text: 'The cheapest fare is 120 EUR.' },
          tool_calls: [],
          finish_reason: 'stop',
          usage: { input_tokens: 8, output_tokens: 4 },
        };
      }
      if (n === 1) return call('d1', 'delegate', { input: 'find the cheapest fare', objective: 'fares' });
      shown.push(...context.messages.filter((m) => m.role === 'tool').map((m) => String(m.content)));
      return {
        message: { text: 'Booked the cheapest fare.' },
        tool_calls: [],
        finish_reason: 'stop',
        usage: { input_tokens: 10, output_tokens: 5 },
      };
    };
    const runtime = createRuntime({
      endpoints: local,
      tableName: local.tableName,
      queueUrl: QueueUrl ?? '',
      bucketName: local.bucketName,
      modelFunctions: { '/test/delegating': fn },
    });
    try {
      const tools = [
        {
          name: 'delegate',
          function_path: DELEGATE_TOOL,
          description: 'Hands a sub-task to a child agent run and returns its result.',
          schema: {
            type: 'object',
            properties: { input: { type: 'string' }, objective: { type: 'string' } },
          },
          mutating: false,
          replay_safe: true,
        },
      ];
      const { run } = await runtime.engine.createRun(
        {
          subject: uniqueSubject(),
          reducer: { function_path: AGENT_LOOP_PATH },
          input: 'book me the cheapest fare',
          context: { instructions: 'You help.', tools, mode: 'task' },
          executor_config: { model_turn_function: '/test/delegating' },
          budgets: { max_depth: 1 },
        },
        alice,
      );

      // Act: the parent delegates and waits; the child runs; the hand-back wakes the parent.
      await runtime.engine.stepRun(run.run_id);
      const parked = await runtime.engine.getRun(run.run_id, alice);
      const [child] = await runtime.engine.listChildren(run.run_id, alice);
      await runtime.engine.stepRun(child?.run_id ?? '');
      await runtime.engine.stepRun(run.run_id);

      // Assert
      expect(parked.status).toBe('waiting');
      const ended = await runtime.engine.getRun(child?.run_id ?? '', alice);
      expect(ended).toMatchObject({
        status: 'completed',
        summary: 'The cheapest fare is 120 EUR.',
        parent_run_id: run.run_id,
        depth: 1,
      });
      const done = await runtime.engine.getRun(run.run_id, alice);
      expect(done).toMatchObject({ status: 'completed', summary: 'Booked the cheapest fare.' });
      // The parent's model saw the child's summary as the delegate call's answer.
      expect(shown.some((text) => text.includes('The cheapest fare is 120 EUR.'))).toBe(true);
    } finally {
      runtime.close();
    }
  });
});
