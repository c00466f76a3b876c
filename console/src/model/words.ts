/** Small wording helpers the views share: short digests and counted nouns. Pure. */

/** A digest without its algorithm prefix (`sha256:rfc8785:ab12…` → `ab12…`), cut to `n` characters. */
export function shortDigest(value: string, n = 12): string {
  const bare = value.slice(value.lastIndexOf(':') + 1);
  return bare.length > n ? `${bare.slice(0, n)}…` : bare;
}

/** `1 model call`, `3 model calls`, `1,200 tokens`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}
