/**
 * Canonical JSON (RFC 8785, via `canonicalize`) and sha256 digests for the tools module.
 * Temporary local helper: to be replaced by lib/core/canonical.ts (canonicalJson, digestOf).
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * The RFC 8785 serialization of `value` (keys sorted, numbers in ECMAScript form).
 * Throws TypeError for a value JSON cannot represent (undefined at the top, NaN, Infinity, lone surrogates).
 */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return text;
}

/** Lowercase hex sha256 of the canonical JSON of `value` (64 characters). */
export function sha256OfCanonical(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}
