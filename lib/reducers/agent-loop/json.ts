/**
 * JSON helpers of the agent loop: type guards for untrusted request fields, a JSON clone,
 * canonical JSON (RFC 8785 key order) and UTF-8 lengths. Pure ECMAScript: the QuickJS sandbox
 * has no TextEncoder, no structuredClone and no host calls.
 */

/** A JSON object as the reducer reads it from a request: string keys, unknown values. */
export type JsonRecord = Record<string, unknown>;

/** True for a non-null, non-array object. */
export function isObject(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True for an integral number >= 0 (any magnitude: JSON numbers are doubles). */
export function isInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** A deep copy through JSON (the request is JSON, so nothing is lost). */
export function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** `text` cut to at most `max` UTF-16 code units, the last one an ellipsis when cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Canonical JSON: object keys sorted by UTF-16 code units, no whitespace (RFC 8785 for JSON input). */
export function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const record = value as JsonRecord;
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(record[key])}`).join(',')}}`;
}

/** UTF-8 byte length of `text` (native encoder; a lone surrogate counts 3 bytes like U+FFFD). */
export function utf8Length(text: string): number {
  try {
    return unescape(encodeURIComponent(text)).length;
  } catch {
    let bytes = 0;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code < 0x80) bytes += 1;
      else if (code < 0x800) bytes += 2;
      else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) {
          bytes += 4;
          i += 1;
        } else bytes += 3;
      } else bytes += 3;
    }
    return bytes;
  }
}
