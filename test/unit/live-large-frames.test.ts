/**
 * Large events and failing posts on the live path (lib/live/frame-bounds.ts, fan-out.ts,
 * lib/handlers/stream-batch.ts): an event whose frame would be over MAX_LIVE_FRAME_BYTES is
 * pushed without its data, marked truncated; a notification over MAX_NOTIFICATION_BYTES is
 * published without its large fields; and a post that fails (not gone) for bob's connection
 * fails no stream record, so alice's run in the same batch still reaches her connection.
 * docs/guides/live-streams.md, "Large events".
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  jsonBytes,
  type LiveServerMessage,
  MAX_LIVE_FRAME_BYTES,
  MAX_NOTIFICATION_BYTES,
  type RunEvent,
  type RunNotification,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { createStreamBatchHandler } from '../../lib/handlers/stream-batch.ts';
import { boundedNotification, liveEventMessage } from '../../lib/live/frame-bounds.ts';
import { createMemorySubscriptionStore } from '../../lib/live/memory-subscriptions.ts';

const FAR = 4_000_000_000;

const notification: RunNotification = {
  run_id: 'run-1',
  status: 'failed',
  previous_status: 'running',
  seq: 3,
  version: 3,
  at: 1,
  terminal: true,
  terminal_reason: 'r',
  principal: { kind: 'user', id: 'bob' },
  subject: { workspace: 'user:bob', path: '/p' },
};

describe('large live frames and notifications', () => {
  it('pushes a small event whole and a large one without its data, marked truncated', () => {
    const small: RunEvent = { seq: 1, kind: 'run_started', at: 5, data: { input: 'hi' } };
    expect(liveEventMessage('run-1', small)).toEqual({ type: 'event', run_id: 'run-1', event: small });
    const large: RunEvent = { ...small, operation_id: 'op-1', data: { input: 'x'.repeat(900_000) } };
    const message = liveEventMessage('run-1', large);
    expect(message).toEqual({
      type: 'event',
      run_id: 'run-1',
      event: { seq: 1, kind: 'run_started', at: 5, operation_id: 'op-1', data: {} },
      truncated: true,
    });
    expect(jsonBytes(message)).toBeLessThanOrEqual(MAX_LIVE_FRAME_BYTES);
    // At the bound exactly: still whole.
    const whole = liveEventMessage(
      'run-1',
      small,
      jsonBytes({ type: 'event', run_id: 'run-1', event: small }),
    );
    expect(whole.truncated).toBeUndefined();
  });

  it('publishes a notification over the bound without subject, terminal_reason and outcome', () => {
    expect(boundedNotification(notification)).toEqual(notification);
    const large = { ...notification, terminal_reason: 'y'.repeat(300_000), outcome: 'o' };
    const bounded = boundedNotification(large);
    expect(bounded).toEqual({
      run_id: 'run-1',
      status: 'failed',
      previous_status: 'running',
      seq: 3,
      version: 3,
      at: 1,
      terminal: true,
      principal: { kind: 'user', id: 'bob' },
      truncated: true,
    });
    expect(jsonBytes(bounded)).toBeLessThanOrEqual(MAX_NOTIFICATION_BYTES);
  });
});

/** A stream record of run `runId`'s record item that kept the status `running`. */
function kept(runId: string) {
  const image = marshall({ pk: `RUN#${runId}`, sk: 'R', status: 'running', version: 2 });
  return {
    eventID: runId,
    eventName: 'MODIFY',
    dynamodb: {
      Keys: marshall({ pk: `RUN#${runId}`, sk: 'R' }),
      OldImage: image,
      NewImage: image,
      SequenceNumber: runId,
    },
  };
}

describe('a post that fails for one connection', () => {
  it("fails no stream record: alice's run behind bob's in the batch still reaches her, and one warn line is written", async () => {
    const runs = ['run-bob', 'run-alice'];
    const events = new Map(
      runs.map((id) => [id, [{ seq: 1, kind: 'run_started', at: 1, data: { input: id } } as RunEvent]]),
    );
    const store = {
      getRun: async (id: string) =>
        runs.includes(id)
          ? ({ run_id: id, status: 'running', inbox: [], last_seq: 1 } as unknown as RunRecord)
          : null,
      readEvents: async (id: string, after: number) => (events.get(id) ?? []).filter((e) => e.seq > after),
      releaseSubject: async () => {},
    };
    const subscriptions = createMemorySubscriptionStore();
    for (const [who, run] of [
      ['bob', 'run-bob'],
      ['alice', 'run-alice'],
    ] as const) {
      await subscriptions.openConnection(
        {
          connection_id: `c-${who}`,
          caller: { principal: { kind: 'user', id: who } },
          connected_at: 0,
          token_exp: FAR,
        },
        8,
        0,
      );
      await subscriptions.subscribe(
        { run_id: run, connection_id: `c-${who}`, sent_seq: 0, token_exp: FAR },
        16,
      );
    }
    const sent: { connection: string; message: LiveServerMessage }[] = [];
    const warned: { message: string; attributes: Record<string, unknown> }[] = [];
    const poster = {
      async post(connection: string, message: LiveServerMessage) {
        // As API Gateway answers a throttled or refused post: neither sent nor gone.
        if (connection === 'c-bob')
          throw Object.assign(new Error('Rate exceeded'), { name: 'LimitExceededException' });
        sent.push({ connection, message });
        return 'sent' as const;
      },
      async close() {},
      async alive() {
        return true;
      },
    };
    const logger = {
      debug() {},
      info() {},
      warn(message: string, attributes: Record<string, unknown> = {}) {
        warned.push({ message, attributes });
      },
      error() {},
    };
    const handler = createStreamBatchHandler({
      store,
      subscriptions,
      poster,
      publisher: { publish: async () => {} },
      logger: logger as never,
      now: () => 0,
    });
    const batch = {
      Records: [kept('run-bob'), kept('run-alice'), kept('run-bob')],
    } as unknown as DynamoDBStreamEvent;
    const answer = await handler(batch);
    expect(answer.batchItemFailures).toEqual([]);
    expect(
      sent.map((s) => [s.connection, s.message.type === 'event' ? s.message.event.seq : s.message.type]),
    ).toEqual([['c-alice', 1]]);
    // Rate limited: bob's failures make one line (the clock stood still).
    expect(warned).toHaveLength(1);
    expect(warned[0]?.attributes).toMatchObject({
      run_id: 'run-bob',
      connection_id: 'c-bob',
      error: 'LimitExceededException',
    });
  });
});
