/**
 * The one reading of the AWS SDK's "not now" errors (lib/aws-faults.ts): which errors become
 * StoreUnavailable, which pass through as thrown, and the adapter wrapper that applies it to
 * every method. The SDK's own exception classes are used, not look-alikes.
 */
import {
  ConditionalCheckFailedException,
  InternalServerError,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { isUnavailableFault, raisingStoreUnavailable, unavailableOr } from '../../lib/aws-faults.ts';
import { StoreUnavailable } from '../../lib/engine/errors.ts';
import { CommitRejected } from '../../lib/engine/ports.ts';

const meta = { $metadata: {}, message: 'secret at 10.0.0.7' };
const network = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.7:443`), { code });

describe('isUnavailableFault', () => {
  it('reads throttling, a failing service, a timeout and the network as unavailable', () => {
    const faults = [
      new ProvisionedThroughputExceededException(meta),
      new ThrottlingException(meta),
      new RequestLimitExceeded(meta),
      new InternalServerError(meta),
      Object.assign(new Error('down'), { name: 'ServiceUnavailable', $fault: 'server' }),
      Object.assign(new Error('slow down'), { name: 'SlowDown', $metadata: { httpStatusCode: 503 } }),
      Object.assign(new Error('took too long'), { name: 'TimeoutError' }),
      network('ECONNREFUSED'),
      network('ECONNRESET'),
      new Error('fetch failed', { cause: network('ENOTFOUND') }),
    ];
    expect(faults.map((f) => isUnavailableFault(f))).toEqual(faults.map(() => true));
  });

  it('reads refusals and bugs as not unavailable', () => {
    const others = [
      new ConditionalCheckFailedException(meta),
      new TransactionCanceledException({
        ...meta,
        CancellationReasons: [{ Code: 'ConditionalCheckFailed' }],
      }),
      Object.assign(new Error('bad'), { name: 'ValidationException', $fault: 'client' }),
      new TypeError('undefined is not a function'),
      'a string',
      null,
    ];
    expect(others.map((f) => isUnavailableFault(f))).toEqual(others.map(() => false));
  });
});

describe('unavailableOr', () => {
  it('makes StoreUnavailable of a fault, naming it without the SDK message', () => {
    const cause = new ProvisionedThroughputExceededException(meta);
    const err = unavailableOr(cause, 'DynamoDB');
    expect(err).toBeInstanceOf(StoreUnavailable);
    expect(err).toMatchObject({ code: 'store_unavailable', retryable: true, cause });
    expect((err as Error).message).toBe(
      'DynamoDB is unavailable (ProvisionedThroughputExceededException); retry',
    );
    expect((unavailableOr(network('ECONNREFUSED'), 'S3') as Error).message).toBe(
      'S3 is unavailable (ECONNREFUSED); retry',
    );
  });

  it('passes a typed error through, even one caused by a fault', () => {
    const conflict = new CommitRejected('transaction_conflict', 'busy', null, {
      cause: new ThrottlingException(meta),
    });
    expect(unavailableOr(conflict, 'DynamoDB')).toBe(conflict);
    const other = new ConditionalCheckFailedException(meta);
    expect(unavailableOr(other, 'DynamoDB')).toBe(other);
  });
});

describe('raisingStoreUnavailable', () => {
  it('maps what every method throws or rejects with, and reads other properties through', async () => {
    let calls = 0;
    const adapter = {
      metrics: { reads: 0 },
      get count() {
        return calls;
      },
      async read(): Promise<string> {
        calls += 1;
        throw new ThrottlingException(meta);
      },
      write(): void {
        throw network('EPIPE');
      },
      ok: async (x: number) => x * 2,
    };
    const wrapped = raisingStoreUnavailable(adapter, 'DynamoDB');

    await expect(wrapped.read()).rejects.toBeInstanceOf(StoreUnavailable);
    expect(() => wrapped.write()).toThrow(StoreUnavailable);
    expect(await wrapped.ok(21)).toBe(42);
    expect(wrapped.metrics).toBe(adapter.metrics);
    expect(wrapped.count).toBe(1);
    expect(wrapped.read).toBe(wrapped.read); // one wrapper per method, not one per access
  });
});
