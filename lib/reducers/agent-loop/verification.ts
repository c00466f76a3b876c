/**
 * Verified completion (context.verify_completion / verifier_tool; off unless set): a claim of
 * success is a proposal that needs independent proof before the run completes `succeeded`.
 *
 * The ledger: every trusted tool envelope (not `legacy`) adds its evidence entries (the last
 * entry per subject counts) and, when succeeded, its primary artifact_refs (the claims). A claim
 * is covered by an ok evidence entry for the same locator (and the same revision when both name
 * one). The ledger proves success when it holds at least one ok entry and covers every claim.
 *
 * On a claim of success (a task's final reply, a hand-off tool with ends_run `succeeded`):
 * proven → complete{succeeded, artifacts, evidence}; not proven and a verifier tool configured →
 * call_tool of the verifier with {summary, artifacts} (phase verify), whose succeeded envelope
 * with evidence entries all ok is added to the ledger and decides; still not proven → complete
 * {partial} with `Not verified: <why>. <summary>`, or (on_missing ask_user) ask_user with
 * choices accept | continue: `accept` completes partial, any other answer goes back to the model.
 * docs/architecture.md, "The seams of a step" ("completion claims require independent
 * verification"); docs/contracts/tool-result.md ("The tool-result envelope": evidence,
 * artifact_refs, legacy).
 */
import { canonical, clip, isObject, type JsonRecord } from './json.ts';
import { complete, requestModelTurn } from './operations.ts';
import { emit, type Reduction } from './response.ts';
import type { AgentLoopProof, AgentLoopState, AgentLoopVerification } from './state.ts';
import { findTool, MAX_NOTE_CHARS, skipRemaining } from './turn.ts';

const MAX_CLAIMS = 32;
const MAX_EVIDENCE = 64;
/** The choice of the verification question that accepts the result as partial. */
export const ACCEPT_CHOICE = 'accept';
const CONTINUE_CHOICE = 'continue';

/** The verification settings the state keeps, or undefined when verification is off. */
export function verificationOf(
  onMissing: 'partial' | 'ask_user' | undefined,
  verifier: string | undefined,
): AgentLoopVerification | undefined {
  if (onMissing === undefined && verifier === undefined) return undefined;
  return {
    on_missing: onMissing ?? 'partial',
    ...(verifier !== undefined && { verifier }),
    claims: [],
    evidence: [],
    overflow: false,
  };
}

/** Adds a tool envelope's evidence and (when succeeded) primary artifacts to the ledger. */
export function recordEnvelope(state: AgentLoopState, envelope: JsonRecord): void {
  const verify = state.verify;
  if (verify === undefined || envelope.legacy === true) return;
  if (envelope.status === 'succeeded' && Array.isArray(envelope.artifact_refs)) {
    for (const ref of envelope.artifact_refs) {
      if (!isObject(ref) || ref.role !== 'primary' || !isObject(ref.locator)) continue;
      const proof = proofOf(ref.locator, ref.revision);
      if (verify.claims.some((c) => c.locator === proof.locator && c.revision === proof.revision)) continue;
      if (verify.claims.length >= MAX_CLAIMS) verify.overflow = true;
      else verify.claims.push({ ...proof, ref });
    }
  }
  if (!Array.isArray(envelope.evidence)) return;
  for (const entry of envelope.evidence) {
    if (!isObject(entry) || !isObject(entry.subject) || !isObject(entry.subject.locator)) continue;
    const proof = proofOf(entry.subject.locator, entry.subject.revision);
    const kind = typeof entry.kind === 'string' ? entry.kind : 'evidence';
    const at = verify.evidence.findIndex((e) => e.locator === proof.locator && e.revision === proof.revision);
    if (at >= 0) verify.evidence.splice(at, 1);
    if (verify.evidence.length >= MAX_EVIDENCE) {
      verify.overflow = true;
      continue;
    }
    verify.evidence.push({ ...proof, ok: entry.ok === true, kind });
  }
}

function proofOf(locator: JsonRecord, revision: unknown): AgentLoopProof {
  return { locator: canonical(locator), revision: isObject(revision) ? canonical(revision) : null };
}

/** What the ledger proves: ok with the complete effect's artifacts and evidence, or why not. */
type Verdict = { ok: true; artifacts: unknown[]; evidence: unknown[] } | { ok: false; why: string };

export function verdict(verify: AgentLoopVerification): Verdict {
  if (verify.overflow) {
    return { ok: false, why: 'the tools reported more artifacts or evidence than the reducer can check' };
  }
  const proven = verify.evidence.filter((e) => e.ok);
  if (proven.length === 0) {
    const failed = verify.evidence.length > 0 ? ' (every evidence entry reported ok: false)' : '';
    return { ok: false, why: `no tool reported evidence for the result${failed}` };
  }
  const uncovered = verify.claims.filter(
    (claim) =>
      !proven.some(
        (e) =>
          e.locator === claim.locator &&
          (claim.revision === null || e.revision === null || e.revision === claim.revision),
      ),
  );
  if (uncovered.length > 0) {
    const names = uncovered.map((c) => describe(c.locator)).join(', ');
    return { ok: false, why: `no ok evidence for ${uncovered.length} artifact(s): ${names}` };
  }
  return {
    ok: true,
    artifacts: verify.claims.map((c) => c.ref),
    evidence: proven.map((e) => ({
      kind: e.kind,
      subject: {
        locator: JSON.parse(e.locator) as unknown,
        ...(e.revision !== null && { revision: JSON.parse(e.revision) as unknown }),
      },
      ok: true,
    })),
  };
}

/** A locator's path when it has one, else its canonical JSON. */
function describe(locator: string): string {
  const parsed = JSON.parse(locator) as unknown;
  return isObject(parsed) && typeof parsed.path === 'string' ? parsed.path : locator;
}

/**
 * The model claims success with `summary`: completes succeeded when verification is off or the
 * ledger proves it, else calls the verifier (once per claim) or ends the claim unverified.
 */
export function claimSuccess(ctx: Reduction, summary: string): void {
  const verify = ctx.state.verify;
  if (verify === undefined) {
    complete(ctx, 'succeeded', summary);
    return;
  }
  const result = verdict(verify);
  if (result.ok) {
    delete verify.pending;
    complete(ctx, 'succeeded', summary, result);
    return;
  }
  const tool = verify.verifier !== undefined ? findTool(ctx.state, verify.verifier) : null;
  if (tool !== null) {
    skipRemaining(ctx.state, 'Not executed: the run is checking its result.');
    verify.pending = { summary: clip(summary, MAX_NOTE_CHARS), attempts: 0 };
    issueVerifier(ctx);
    return;
  }
  unverified(ctx, summary, result.why);
}

/** Calls the verifier tool for the pending claim (a first attempt or a re-issue). */
export function issueVerifier(ctx: Reduction): void {
  const state = ctx.state;
  const verify = state.verify;
  const tool = verify?.verifier !== undefined ? findTool(state, verify.verifier) : null;
  const pending = verify?.pending;
  if (verify === undefined || tool === null || pending === undefined) return;
  pending.attempts += 1;
  state.phase = 'verify';
  state.interrupted = false;
  state.awaiting = emit(ctx, {
    kind: 'call_tool',
    tool: tool.function_path !== undefined ? tool.function_path : tool.name,
    args: { summary: pending.summary, artifacts: verify.claims.map((c) => c.ref) },
    mutating: tool.mutating,
    replay_safe: tool.replay_safe,
    ...(tool.interruptible === false && { interruptible: false }),
    ...(tool.timeout_ms !== undefined && { timeout_ms: tool.timeout_ms }),
  });
}

/** The verifier's tool_result: proves the claim, or ends it unverified saying why. */
export function onVerifierResult(ctx: Reduction, envelope: JsonRecord): void {
  const state = ctx.state;
  const verify = state.verify;
  const pending = verify?.pending;
  if (verify === undefined || pending === undefined) return;
  if (state.steer_seq > state.cutoff_seq) {
    // The user steered while the result was being checked: the model hears it first.
    delete verify.pending;
    state.steer_seq = 0;
    requestModelTurn(ctx, false);
    return;
  }
  const status = typeof envelope.status === 'string' ? envelope.status : 'failed';
  const entries = Array.isArray(envelope.evidence) ? envelope.evidence : [];
  recordEnvelope(state, envelope);
  let why: string | null = null;
  if (envelope.legacy === true)
    why = `the verifier ${verify.verifier} did not answer with a tool-result envelope`;
  else if (status !== 'succeeded') why = `the verifier ${verify.verifier} answered ${status}`;
  else if (entries.length === 0) why = `the verifier ${verify.verifier} reported no evidence`;
  else if (entries.some((e) => !isObject(e) || e.ok !== true)) {
    why = `the verifier ${verify.verifier} reported evidence that is not ok`;
  }
  const result = verdict(verify);
  if (why === null && result.ok) {
    delete verify.pending;
    complete(ctx, 'succeeded', pending.summary, result);
    return;
  }
  unverified(ctx, pending.summary, why ?? (result.ok ? 'the verifier did not prove it' : result.why));
}

/** The verifier's operation failed: re-issued while retries are left, else the claim is unverified. */
export function onVerifierFailed(ctx: Reduction, retryable: boolean, reason: string): void {
  const state = ctx.state;
  const pending = state.verify?.pending;
  if (pending === undefined) return;
  if (retryable && pending.attempts <= state.max_retries) {
    state.counters.retries += 1;
    issueVerifier(ctx);
    return;
  }
  unverified(ctx, pending.summary, `the verifier ${state.verify?.verifier} failed (${reason})`);
}

/** Ends a claim that could not be proven: complete partial, or ask the user (on_missing). */
function unverified(ctx: Reduction, summary: string, why: string): void {
  const verify = ctx.state.verify;
  if (verify?.on_missing === 'ask_user') {
    verify.pending = { summary: clip(summary, MAX_NOTE_CHARS), attempts: 0, asked: true };
    ctx.state.phase = 'user';
    ctx.state.awaiting = emit(ctx, {
      kind: 'ask_user',
      question: `I could not verify that the task succeeded: ${why}. My result: ${summary}\nAnswer "${ACCEPT_CHOICE}" to end the run with this result as partial, or "${CONTINUE_CHOICE}" (or anything else) to let me keep working.`,
      choices: [ACCEPT_CHOICE, CONTINUE_CHOICE],
    });
    return;
  }
  if (verify !== undefined) delete verify.pending;
  complete(ctx, 'partial', `Not verified: ${why}. ${summary}`);
}

/**
 * The user's answer to the verification question: `accept` completes partial; anything else
 * returns to the model (the answer is in its transcript). False when no such question was asked.
 */
export function onVerificationAnswer(ctx: Reduction): boolean {
  const verify = ctx.state.verify;
  const pending = verify?.pending;
  if (verify === undefined || pending?.asked !== true) return false;
  delete verify.pending;
  const value = ctx.data.value;
  if (typeof value === 'string' && value.trim().toLowerCase() === ACCEPT_CHOICE) {
    complete(ctx, 'partial', `Accepted by the user without verification. ${pending.summary}`);
    return true;
  }
  requestModelTurn(ctx, false);
  return true;
}
