/**
 * Canonical JSON (RFC 8785, JSON Canonicalization Scheme) and sha256 digests over it.
 *
 * Every digest the runtime computes or compares (approval subject digests, control command
 * digests, state and payload digests) is sha256 over the canonical JSON of a value, never over
 * a map's insertion order. docs/contracts/reducer.md, "Writing a deterministic reducer" (item 6)
 * and "Validation" (state_too_large: over 256 KiB as canonical JSON);
 * docs/contracts/run-lifecycle.md, "Controls" (subject_digest: sha256 over canonical JSON, RFC
 * 8785).
 *
 * Pure: `canonicalize` and `@noble/hashes` import no Node built-in (checked by
 * test/unit/canonical.test.ts), so this module may live in lib/core.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import canonicalize from 'canonicalize';

/** Stable code of {@link CanonicalJsonError}. */
export const NOT_JSON = 'not_json';

/**
 * A value has no JSON representation: `undefined`, a function or a symbol at top level, NaN or
 * ±Infinity anywhere, a BigInt, a string with a lone surrogate, or a cycle. Terminal: the same
 * value always fails. `cause` holds the underlying error when there is one.
 */
export class CanonicalJsonError extends Error {
  override readonly name = 'CanonicalJsonError';
  readonly code = NOT_JSON;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * The RFC 8785 canonical JSON text of `value`: object keys sorted by UTF-16 code units, no
 * whitespace, numbers in ECMAScript shortest form (`1.0` → `1`, `-0` → `0`, `1e21` → `1e+21`).
 * Inside containers JSON.stringify's rules apply: an object property whose value is `undefined`
 * (or a function/symbol) is omitted, such an array element becomes `null`, `toJSON` is honoured.
 * Throws CanonicalJsonError when the value has no JSON representation (see the class).
 */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new CanonicalJsonError(`value has no canonical JSON form: ${reason}`, { cause });
  }
  if (text === undefined) {
    throw new CanonicalJsonError(`value has no canonical JSON form: top-level ${typeof value}`);
  }
  return text;
}

/** sha256 of `data` as 64 lowercase hex characters; a string is hashed as its UTF-8 bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return bytesToHex(sha256(typeof data === 'string' ? utf8ToBytes(data) : data));
}

/**
 * `sha256Hex(canonicalJson(value))`: the digest of a JSON value, independent of key order.
 * Throws CanonicalJsonError like {@link canonicalJson}.
 */
export function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * Size in bytes of the UTF-8 encoding of `canonicalJson(value)` (what the 256 KiB state limit,
 * MAX_STATE_BYTES, is measured in). Throws CanonicalJsonError like {@link canonicalJson}.
 */
export function canonicalByteLength(value: unknown): number {
  return utf8ToBytes(canonicalJson(value)).length;
}

/**
 * The deepest nesting any input may have (objects and arrays, counted from 1 for the value
 * itself): request bodies, model outputs and tool results deeper than this are refused at the
 * boundary, before any recursive code (validation, canonical JSON, the sandbox) meets them.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * How deeply `value` nests (0 for a scalar, 1 for a flat object or array), counted without
 * recursion; stops counting once past `limit`, so a hostile value costs no more than that.
 */
export function jsonDepth(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
  return max;
}

/** Whether `value` is a JSON object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value's JSON kind for messages: `null`, `an array`, or its typeof. */
export function describeJsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
