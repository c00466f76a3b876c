/**
 * The Lambda adapter (hono/aws-lambda) drops a header whose value is empty before the app sees
 * it, so an empty `Last-Event-ID` would read as none and stream from seq 1. A Lambda event's
 * empty `Last-Event-ID` is given a value that is not a seq instead, so that the stream route
 * refuses it 400 validation_failed as it refuses any other bad value (docs/reference/http-api.md).
 */

/** What an empty `Last-Event-ID` of a Lambda event becomes (not decimal digits: refused). */
export const EMPTY_HEADER_VALUE = 'empty';

const KEPT = 'last-event-id';

/** `event` with an empty `Last-Event-ID` (any case, single- or multi-value) made {@link EMPTY_HEADER_VALUE}. */
export function keepEmptyLastEventId<E>(event: E): E {
  const e = event as {
    headers?: Record<string, string | undefined> | null;
    multiValueHeaders?: Record<string, string[] | undefined> | null;
  };
  const headers = e.headers ? { ...e.headers } : e.headers;
  let changed = false;
  for (const name of Object.keys(headers ?? {})) {
    if (name.toLowerCase() === KEPT && headers?.[name] === '') {
      (headers as Record<string, string>)[name] = EMPTY_HEADER_VALUE;
      changed = true;
    }
  }
  const multi = e.multiValueHeaders ? { ...e.multiValueHeaders } : e.multiValueHeaders;
  for (const name of Object.keys(multi ?? {})) {
    const values = multi?.[name];
    if (name.toLowerCase() === KEPT && values?.some((v) => v === '')) {
      (multi as Record<string, string[]>)[name] = values.map((v) => (v === '' ? EMPTY_HEADER_VALUE : v));
      changed = true;
    }
  }
  if (!changed) return event;
  return {
    ...event,
    headers,
    ...(e.multiValueHeaders !== undefined ? { multiValueHeaders: multi } : {}),
  } as E;
}
