/** Small JSON helpers of the tools module: plain clones, deep freezing, UTF-8 sizes. */

/**
 * A plain-JSON copy of `value` and its UTF-8 size in bytes (of the compact serialization).
 * `undefined` becomes null. Returns null when the value has no JSON form (cycle, BigInt).
 */
export function toJson(value: unknown): { value: unknown; bytes: number } | null {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return null;
  }
  if (text === undefined) return { value: null, bytes: 4 };
  return { value: JSON.parse(text) as unknown, bytes: Buffer.byteLength(text, 'utf8') };
}

/** Freezes `value` and everything reachable from it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** True for a non-null, non-array object. */
export { isPlainObject } from '../core/canonical.ts';
