/**
 * Reading run changes off the table's stream: the statuses come from the items' `status`
 * attribute, so a commit that kept its status is never decoded; a status change decodes the new
 * image once, for its notification. See docs/contracts/run-lifecycle.md, "Following a run over
 * HTTP, WebSocket and SSE".
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { notificationOf, runChangeOf, type StreamRecordLike } from '../../lib/live/stream-records.ts';
import { emptyTail } from '../../lib/store/event-tail.ts';
import { packBody } from '../../lib/store/record-codec.ts';
import { newRun } from '../support/runs.ts';

function image(status: string, body: Uint8Array): Record<string, unknown> {
  return marshall({ pk: 'RUN#run-1', sk: 'R', status, version: 1, body_z: body });
}

function change(before: Record<string, unknown> | undefined, after: Record<string, unknown> | undefined) {
  const record: StreamRecordLike = {
    eventName: 'MODIFY',
    dynamodb: { Keys: marshall({ pk: 'RUN#run-1', sk: 'R' }), OldImage: before, NewImage: after },
  };
  return runChangeOf(record);
}

const corrupt = new Uint8Array([2, 0xff, 0xfe, 0xfd]);

describe('run changes off the stream', () => {
  it('reads the statuses without decoding the bodies, and makes no notification when the status stayed', () => {
    const kept = change(image('running', corrupt), image('running', corrupt));
    expect(kept).toMatchObject({ run_id: 'run-1', previous_status: 'running', status: 'running' });
    expect(kept === null ? 'none' : notificationOf(kept)).toBeNull();
    expect(() => kept?.after()).toThrow();
  });

  it('decodes the new image for a status change and notifies it', () => {
    const record = newRun();
    const body = packBody(
      JSON.stringify({ ...record, version: 1 }),
      JSON.stringify(emptyTail(record.last_seq)),
    );
    const created = change(undefined, image(record.status, body));
    expect(created).toMatchObject({ previous_status: null, status: 'queued' });
    expect(created === null ? null : notificationOf(created)).toMatchObject({
      run_id: 'run-1',
      status: 'queued',
      previous_status: null,
      version: 1,
      terminal: false,
      principal: { kind: 'user', id: 'alice' },
    });
  });

  it('reads a removed record as no status, and other items as no change', () => {
    const removed = change(image('completed', corrupt), undefined);
    expect(removed).toMatchObject({ previous_status: 'completed', status: null });
    expect(removed?.after()).toBeNull();
    expect(removed === null ? 'none' : notificationOf(removed)).toBeNull();
    expect(runChangeOf({ dynamodb: { Keys: marshall({ pk: 'RUN#run-1', sk: 'E#1' }) } })).toBeNull();
  });
});
