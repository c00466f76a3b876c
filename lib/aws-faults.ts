/**
 * The one reading of the AWS SDK's errors that mean "not now": an adapter over DynamoDB, S3 or
 * SQS turns each into StoreUnavailable (retryable, the SDK's error as its cause), so that
 * nothing above the adapters inspects an SDK's error names. Everything else passes through as
 * thrown. docs/architecture.md, "Conventions".
 */
import { StoreUnavailable } from './engine/errors.ts';
import { EngineModuleError } from './engine/module-error.ts';

/** Node's network errors: the request got no answer (or a cut one). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The SDK's names for throttling, a failing service, a timeout, or a conflict that outlasted its retries. */
const UNAVAILABLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'Throttling',
  'RequestLimitExceeded',
  'RequestThrottled',
  'SlowDown',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TimeoutError',
  'RequestTimeout',
  // A plain write that met a transaction on the same item, after the adapter's own retries: busy now.
  'TransactionConflictException',
]);

/**
 * Whether an error of the AWS SDK (or of the network under it) says the service could not
 * answer now: a network code, a throttling or unavailability name, a server fault (`$fault`
 * 'server', any 5xx), or such an error as its cause.
 */
export function isUnavailableFault(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  const e = err as {
    name?: unknown;
    code?: unknown;
    $fault?: unknown;
    $metadata?: { httpStatusCode?: unknown };
    cause?: unknown;
  };
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  if (typeof e.name === 'string' && UNAVAILABLE_NAMES.has(e.name)) return true;
  if (e.$fault === 'server') return true;
  const status = e.$metadata?.httpStatusCode;
  if (typeof status === 'number' && (status >= 500 || status === 429)) return true;
  return e.cause !== undefined && e.cause !== err && isUnavailableFault(e.cause, depth + 1);
}

/** `err` as StoreUnavailable when it is an unavailable fault of `service`, else `err` itself (typed errors always). */
export function unavailableOr(err: unknown, service: string): unknown {
  // A typed error (a store refusal, StoreUnavailable itself) already says what happened.
  if (err instanceof EngineModuleError || !isUnavailableFault(err)) return err;
  // The name or network code only: the API answers this message, and an SDK's may hold addresses.
  const code = (err as { code?: unknown }).code;
  const why = typeof code === 'string' ? code : err instanceof Error ? err.name : 'unknown';
  return new StoreUnavailable(`${service} is unavailable (${why}); retry`, { cause: err });
}

/**
 * The adapter with every method's rejection (or throw) passed through `unavailableOr`: the one
 * place an adapter's SDK faults become StoreUnavailable. Other properties (metrics, getters)
 * read through unchanged. Does no I/O.
 */
export function raisingStoreUnavailable<T extends object>(adapter: T, service: string): T {
  const wrapped = new Map<PropertyKey, { method: unknown; guarded: unknown }>();
  return new Proxy(adapter, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const known = wrapped.get(prop);
      if (known?.method === value) return known.guarded;
      const method = value as (...args: unknown[]) => unknown;
      const guarded = function (this: unknown, ...args: unknown[]) {
        let out: unknown;
        try {
          out = method.apply(this === receiver ? target : this, args);
        } catch (err) {
          throw unavailableOr(err, service);
        }
        return out instanceof Promise
          ? out.catch((err: unknown) => {
              throw unavailableOr(err, service);
            })
          : out;
      };
      wrapped.set(prop, { method, guarded });
      return guarded;
    },
  });
}
