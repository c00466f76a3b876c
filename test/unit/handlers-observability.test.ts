import { describe, expect, it } from 'vitest';
import {
  createCountingMetrics,
  describeError,
  engineLog,
  type LogSink,
  REDUCER_REFUSED_MESSAGE,
} from '../../lib/handlers/observability.ts';

function recording(): LogSink & { lines: [string, string, Record<string, unknown>][] } {
  const lines: [string, string, Record<string, unknown>][] = [];
  const at =
    (level: string) =>
    (message: string, ...attributes: Record<string, unknown>[]) =>
      lines.push([level, message, Object.assign({}, ...attributes)]);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describe('engineLog', () => {
  it('writes each engine entry at its level with run_id, epoch and the rest as attributes', () => {
    const logger = recording();
    const log = engineLog(logger, createCountingMetrics());

    log({ level: 'info', message: 'lease taken over', run_id: 'r1', epoch: 4, previous_owner: 'w' });
    log({ level: 'warn', message: 'reducer unavailable', run_id: 'r2', reason: 'trap' });
    log({ level: 'error', message: 'sweep of a run failed', run_id: 'r3' });
    log({ message: 'tool audit', op_id: 'r4/op/1' });

    expect(logger.lines).toEqual([
      ['info', 'lease taken over', { run_id: 'r1', epoch: 4, previous_owner: 'w' }],
      ['warn', 'reducer unavailable', { run_id: 'r2', reason: 'trap' }],
      ['error', 'sweep of a run failed', { run_id: 'r3' }],
      ['info', 'tool audit', { op_id: 'r4/op/1' }],
    ]);
  });

  it('counts a refused reducer response as a ReducerRefusal', () => {
    const metrics = createCountingMetrics();
    const log = engineLog(recording(), metrics);

    log({ level: 'warn', message: REDUCER_REFUSED_MESSAGE, run_id: 'r1', code: 'multiple_operations' });
    log({ level: 'warn', message: 'reducer unavailable', run_id: 'r1' });

    expect(metrics.totals).toEqual({ ReducerRefusals: 1 });
  });
});

describe('describeError', () => {
  it('keeps the message, the name and a stable code or reason', () => {
    const coded = Object.assign(new Error('lost'), { code: 'lease_lost' });
    const rejected = Object.assign(new Error('stale'), { name: 'CommitRejected', reason: 'stale_version' });
    expect(describeError(coded)).toEqual({ error: 'lost', error_name: 'Error', error_code: 'lease_lost' });
    expect(describeError(rejected)).toMatchObject({
      error_name: 'CommitRejected',
      error_code: 'stale_version',
    });
    expect(describeError('plain')).toEqual({ error: 'plain' });
  });
});
