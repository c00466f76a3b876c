/**
 * The approval card's words for people: what its digest is a hash of and why approving quotes
 * it, and where a tool call's summary (`Call echo 1.0.0 (read-only, risk low)`) comes from. Pure.
 * docs/contracts/run-lifecycle.md, "Controls" (`approve`: the digest must be the request's) and
 * docs/contracts/reducer.md, "Writing a deterministic reducer" (digest over canonical JSON).
 */

/**
 * The line under an approval's digest, by the subject's kind, naming the fold below it that
 * shows what the digest covers (approvalFold): a tool call's digest is over the exact call
 * (tool, version, arguments); a plan's over its items; another kind's over what its reducer put
 * to approval. Approving quotes it, so the approval covers only what is shown.
 */
export function digestHint(kind: string): string {
  const what =
    kind === 'tool_call'
      ? 'the exact call: the tool, its version and its arguments'
      : kind === 'plan'
        ? "the plan's items"
        : 'what the reducer put to approval';
  const changed = kind === 'tool_call' ? 'the call' : kind === 'plan' ? 'the plan' : 'it';
  return (
    `A fingerprint of ${what} (shown below under "${approvalFold(kind)}"). Approving sends it ` +
    `back, so your approval covers exactly this: if ${changed} changed meanwhile, the approval is refused.`
  );
}

/** The title of the fold that shows what an approval covers (its subject's changes). */
export function approvalFold(kind: string): string {
  return kind === 'tool_call' ? 'The call: tool, version and arguments' : 'What it asks for';
}

/** The title on a tool call's summary: where its version, read-only/mutating and risk come from. */
export const TOOL_SUMMARY_HINT =
  'The tool, its version, whether it changes anything (read-only or mutating) and its risk ' +
  "(low, medium, high), as declared when the tool was registered: the risk is the registration's " +
  "risk tier, low when it names none (as the local stack's sample tools, such as echo, do).";

/**
 * What a digest's algorithm prefix means, for the full value the digest's "show full" reveals:
 * `sha256:rfc8785:` (the policy gate's approvalDigest) read out; undefined for another prefix.
 */
export function digestAlgText(full: string): string | undefined {
  return full.startsWith('sha256:rfc8785:')
    ? "sha256:rfc8785: the SHA-256 of the request's canonical JSON (RFC 8785: one fixed way of writing JSON, so the same request always gives the same digest)."
    : undefined;
}

/** The line under an approval's Reason field: it goes with either answer, and where it is kept. */
export const REASON_HINT =
  "Sent with whichever you press, Approve or Reject, and kept in the run's log with your decision.";

/** An approval subject's kind in plain words (`tool_call` → `a tool call`). */
export function approvalKindText(kind: string): string {
  return kind === 'tool_call' ? 'a tool call' : kind === 'plan' ? 'a plan' : kind.replaceAll('_', ' ');
}

/**
 * Why the approval is asked: on a server-driven run a tool call's approval is opened by the tool
 * policy (a rule that requires a person before that tool runs), another kind's by its reducer;
 * on a client-driven run the client opened it. The rule's code is named when the summary carries
 * it (the policy gate writes `; policy rule CODE` into a tool call's summary).
 */
export function approvalWhy(kind: string, hasReducer = true, summary = ''): string {
  if (!hasReducer) return "Why: the run's client asked a person to approve this before it goes on.";
  const rule = /; policy rule ([^\s)]+)/.exec(summary)?.[1];
  if (kind === 'tool_call' && rule !== undefined)
    return `Why: the tool policy's rule ${rule} requires a person to approve this call before it runs.`;
  return kind === 'tool_call'
    ? 'Why: the tool policy requires a person to approve this call before it runs (see the policy in the registry for the rule).'
    : "Why: the run's reducer asked a person to approve this before it goes on.";
}

/** The words of a parked tool call's card (views/ResultCard.tsx). */
export const RESULT_WORDS = {
  what: 'The tool handed its work to something outside the run; the run goes on when its result is delivered here (or with agent-runs deliver).',
  paused: 'The run is paused: a result delivered now is recorded, and the run reads it once it is resumed.',
  keyHint:
    'The name this wait was given (resume_key); a delivery quotes it. Not the Resume control: delivering does not resume a paused run.',
  bodyHint:
    'Any JSON is passed to the run as the tool’s result. A raisin.tool-result/1 envelope (the runtime’s standard result shape: status, payload, reads, writes, evidence) is passed as it is.',
} as const;
