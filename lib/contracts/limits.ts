/**
 * Size limits a user can meet at the API, and the one way every layer words them, so that the
 * same limit reads the same wherever it is hit: "`what` is N bytes, over the L-byte limit".
 * Sizes are UTF-8 bytes of JSON.
 */

/**
 * The largest `context` plus `objective` a create accepts (UTF-8 bytes of their JSON): 160 KiB,
 * what the default agent reducer accepts for its instructions, objective and tools (its
 * `context_too_large`), so that a run it would refuse later is refused at create instead.
 */
export const MAX_CONTEXT_BYTES = 160 * 1024;

/** UTF-8 bytes of `value`'s JSON (0 for undefined). */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value);
  return text === undefined ? 0 : new TextEncoder().encode(text).length;
}

/** The message of a size limit: `${what} is ${bytes} bytes, over the ${limit}-byte limit` (without bytes when unknown). */
export function overLimitMessage(what: string, limit: number, bytes?: number): string {
  return bytes === undefined
    ? `${what} is over the ${limit}-byte limit`
    : `${what} is ${bytes} bytes, over the ${limit}-byte limit`;
}
