/**
 * The approval card's words for people: what its digest is a hash of and why approving quotes
 * it, and where a tool call's summary (`Call echo 1.0.0 (read-only, risk low)`) comes from. Pure.
 * docs/contracts/run-lifecycle.md, "Controls" (`approve`: the digest must be the request's) and
 * docs/contracts/reducer.md, "Writing a deterministic reducer" (digest over canonical JSON).
 */

/**
 * The line under an approval's digest, by the subject's kind: a tool call's digest is sha256
 * over the exact call (tool, version, arguments); a plan's over its items; another kind's over
 * what its reducer put to approval. Approving quotes it, so the approval covers only what is shown.
 */
export function digestHint(kind: string): string {
  const what =
    kind === 'tool_call'
      ? 'the exact call: the tool, its version and its arguments (under Changes)'
      : kind === 'plan'
        ? "the plan's items (under Changes)"
        : 'what the reducer put to approval (under Changes)';
  return (
    `A fingerprint (sha256) of ${what}. Approving sends it back, so your approval covers exactly ` +
    'this; if the call changed meanwhile, the approval is refused (digest_mismatch).'
  );
}

/** The title on a tool call's summary: where its version, read-only/mutating and risk come from. */
export const TOOL_SUMMARY_HINT =
  'The tool, its version, whether it changes anything (read-only or mutating) and its risk ' +
  '(low, medium, high), as declared when the tool was registered.';
