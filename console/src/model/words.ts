/** Small wording helpers the views share: short digests, counted nouns, an empty plan. Pure. */

/** A digest without its algorithm prefix (`sha256:rfc8785:ab12…` → `ab12…`), cut to `n` characters. */
export function shortDigest(value: string, n = 12): string {
  const bare = value.slice(value.lastIndexOf(':') + 1);
  return bare.length > n ? `${bare.slice(0, n)}…` : bare;
}

/** `1 model call`, `3 model calls`, `1,200 tokens`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/**
 * What the plan says when there is none: a server-driven run's reducer has not written one yet; a
 * client-driven run (no reducer) has none, since only a reducer writes a plan.
 */
export function noPlanText(hasReducer: boolean): string {
  return hasReducer
    ? 'No plan yet: the reducer (the code that decides this run) writes one as it works.'
    : "No plan: this run is moved by its client's own code, and only a server-side reducer writes a plan.";
}
