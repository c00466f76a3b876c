/**
 * The price arithmetic of lib/core/prices.ts (DynamoDB's capacity rules, a run's cost at the
 * price tables), the per-run meter of lib/engine/usage-meter.ts and the index-write rule of
 * lib/store/metering.ts.
 */
import { describe, expect, it } from 'vitest';
import { EMPTY_METERED, EMPTY_USAGE } from '../../lib/contracts/index.ts';
import {
  addCharge,
  costOf,
  DEFAULT_PRICES,
  gbSeconds,
  modelPriceKey,
  perMillionOperations,
  readUnits,
  writeUnits,
} from '../../lib/core/prices.ts';
import { PendingCharges } from '../../lib/engine/ports.ts';
import { createUsageMeter } from '../../lib/engine/usage-meter.ts';
import { indexWrites, transactWriteUnits } from '../../lib/store/metering.ts';

describe('DynamoDB capacity rules', () => {
  it('charges a write 1 unit per KB of the larger of its sizes, at least 1, twice in a transaction', () => {
    expect(writeUnits(0, 10, false)).toBe(1);
    expect(writeUnits(0, 1024, false)).toBe(1);
    expect(writeUnits(0, 1025, false)).toBe(2);
    expect(writeUnits(3_000, 10, true)).toBe(6);
    expect(writeUnits(10, 5_000, true)).toBe(10);
  });

  it('charges a read 1 unit per 4 KB, half when eventually consistent, a GetItem at least 1', () => {
    expect(readUnits(1_500, true, true)).toBe(1);
    expect(readUnits(9_000, true, true)).toBe(3);
    expect(readUnits(9_000, false, true)).toBe(1.5);
    expect(readUnits(0, true, true)).toBe(1);
    expect(readUnits(0, true, false)).toBe(0);
  });
});

describe('a run cost', () => {
  const run = {
    executor_config: { model_turn_function: '/lib/models/recorded' },
    usage: { ...EMPTY_USAGE, input_tokens: 1_000_000, output_tokens: 100_000 },
    metered: {
      ...EMPTY_METERED,
      dynamodb_write_units: 2_000_000,
      dynamodb_read_units: 4_000_000,
      sqs_requests: 1_000_000,
      lambda_invocations: 1_000_000,
      lambda_gb_seconds: 100_000,
      s3_put_requests: 1_000,
      s3_get_requests: 10_000,
    },
  };

  it('prices tokens at the model and each AWS request at the region table, line by line', () => {
    const cost = costOf(run, DEFAULT_PRICES);
    expect(cost.model).toBe('gpt-4o');
    expect(cost.lines).toEqual({
      model_input_usd: 2.5,
      model_output_usd: 1,
      dynamodb_write_usd: 1.25,
      dynamodb_read_usd: 0.5,
      sqs_usd: 0.4,
      lambda_requests_usd: 0.2,
      lambda_duration_usd: 1.33334,
      s3_usd: 0.009,
    });
    expect(cost.model_usd).toBe(3.5);
    expect(cost.aws_usd).toBe(3.69234);
    expect(cost.total_usd).toBe(7.19234);
    expect(cost.prices_as_of).toBe(DEFAULT_PRICES.as_of);
    expect(cost.region).toBe('us-east-1');
  });

  it('prices a run with no metered requests and an unpriced model at zero, naming no model', () => {
    const cost = costOf(
      {
        executor_config: { model_turn_function: '/lib/models/openai' },
        usage: { ...EMPTY_USAGE, input_tokens: 5 },
      },
      DEFAULT_PRICES,
    );
    expect(cost.model).toBeNull();
    expect(cost.total_usd).toBe(0);
  });

  it('finds a Bedrock model by the last segment of its function path', () => {
    const id = 'amazon.nova-lite-v1:0';
    expect(
      modelPriceKey(
        { executor_config: { model_turn_function: `/lib/models/bedrock/${id}` } },
        DEFAULT_PRICES,
      ),
    ).toBe(id);
  });

  it('gives dollars per 1M operations, 0 for none', () => {
    expect(perMillionOperations(0.5, 1_000)).toBe(500);
    expect(perMillionOperations(0.5, 0)).toBe(0);
  });

  it('dates every price table entry and names its source', () => {
    const prices = [
      ...Object.values(DEFAULT_PRICES.aws).filter((p) => typeof p === 'object'),
      ...Object.values(DEFAULT_PRICES.models).flatMap((m) => [m.input, m.output]),
    ];
    for (const p of prices) expect(p.source).toMatch(/^https:\/\//);
    expect(DEFAULT_PRICES.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });
});

describe('metering arithmetic', () => {
  it('adds a charge to the metered counts, keeping the record item size it does not add', () => {
    const next = addCharge(
      { ...EMPTY_METERED, record_item_bytes: 900, sqs_requests: 1 },
      { sqs_requests: 2 },
    );
    expect(next.sqs_requests).toBe(3);
    expect(next.record_item_bytes).toBe(900);
    expect(gbSeconds(1_000, 1024)).toBe(1);
  });

  it('lets one commit take what a run owes, so a second commit meanwhile cannot carry it too', () => {
    const pending = new PendingCharges();
    pending.add('r1', { dynamodb_read_units: 2 });
    const carried = pending.take('r1');
    pending.add('r1', { dynamodb_read_units: 0.5 });
    expect(carried).toEqual({ dynamodb_read_units: 2 });
    expect(pending.take('r1')).toEqual({ dynamodb_read_units: 0.5 });
    expect(pending.owed('r1')).toEqual({});
  });

  it('charges a step one invocation and its measured duration at the configured memory', () => {
    let t = 0;
    const meter = createUsageMeter({ memoryMb: 2048, now: () => t });
    meter.beginStep('r1');
    t = 250;
    meter.sent('r1');
    const owed = meter.take('r1');
    expect(owed).toEqual({ lambda_invocations: 1, lambda_ms: 250, lambda_gb_seconds: 0.5, sqs_requests: 1 });
    t = 300;
    meter.endStep('r1');
    expect(meter.take('r1')).toEqual({ lambda_ms: 50, lambda_gb_seconds: 0.1 });
    // A commit that failed gives its charge back: the next one carries it.
    meter.giveBack('r1', owed);
    expect(meter.take('r1')).toEqual(owed);
  });
});

describe('index writes of a write (lib/store/metering.ts)', () => {
  const keys = { status_shard: 'running#1', created_at: 5, principal_shard: 'p#1' };
  it('counts one entry for an index entered or left, two for changed keys, none when they stay', () => {
    expect(indexWrites({}, keys)).toBe(2);
    expect(indexWrites(keys, keys)).toBe(0);
    expect(indexWrites(keys, { ...keys, status_shard: 'waiting#1' })).toBe(2);
    expect(indexWrites(keys, { ...keys, sweep_shard: '3', sweep_due: 9 })).toBe(1);
    expect(indexWrites({ ...keys, sweep_shard: '3', sweep_due: 9 }, keys)).toBe(1);
  });

  it('doubles a write and its index entries in a transaction, not as a plain write', () => {
    const write = {
      op: 'put' as const,
      role: 'record' as const,
      item: { pk: 'RUN#r', sk: 'R', blob: 'x'.repeat(1_500), ...keys },
    };
    expect(transactWriteUnits(write, null, true)).toBe(2 * 2 + 2 * 2);
    expect(transactWriteUnits(write, null, false)).toBe(2 + 2);
  });
});
