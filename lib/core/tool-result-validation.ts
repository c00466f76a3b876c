/**
 * The envelope validator and THE normalizer of `raisin.tool-result/1`: every tool result, whoever
 * produced it (an in-process handler, the Lambda, HTTP or MCP adapter through the dispatcher, or
 * a result delivered over `POST /results/{resume_key}`), reaches the reducer through
 * {@link normalizeToolResult}, so the same value gives the same envelope on every path.
 * Pure: imports only lib/contracts and zod.
 * docs/contracts/tool-result.md, "The tool-result envelope" (refusal codes, legacy wrapping);
 * docs/architecture.md, "The seams of a step" (the normalizer).
 */
import { z } from 'zod';
import { type EnvelopeRefusalCode, TOOL_RESULT_ENVELOPE, ToolResultEnvelope } from '../contracts/index.ts';
import { describeJsonKind, isPlainObject } from './canonical.ts';

/**
 * Why a claimed envelope was refused: one of the 4 refusal codes, the dotted path of the field
 * at fault (`resume_key`, `artifact_refs`, `evidence.0.subject.revision.alg`,
 * `diagnostics.1.severity`, `envelope`; "" when the value itself is not an object), and a
 * readable message that names the path. An HTTP answer can give `code` and `path` as they are.
 */
export type EnvelopeRefusal = { code: EnvelopeRefusalCode; path: string; message: string };

export type ToolResultValidation =
  | { ok: true; envelope: ToolResultEnvelope }
  | ({ ok: false } & EnvelopeRefusal);

/**
 * What {@link normalizeToolResult} returns: always an envelope the reducer may see; `refusal`
 * when the tool's own envelope was refused (the envelope is then the failed stand-in).
 */
export type NormalizedToolResult = { envelope: ToolResultEnvelope; refusal?: EnvelopeRefusal };

/**
 * Checks a value that claims to be a `raisin.tool-result/1` envelope and returns it decoded
 * (defaults applied, null optionals read as absent, unknown fields dropped) or the first
 * refusal. Never throws.
 *
 * Checked in this order; the first violation wins:
 * 1. envelope_mismatch: not an object (path ""), `envelope` is not "raisin.tool-result/1" (a legacy value without the field included; path `envelope`), or the object does not decode (bad status, read revision without alg, ...; the path of the first zod issue).
 * 2. waiting_without_resume_key: status is waiting and resume_key is absent, null or "" (path `resume_key`).
 * 3. writes_without_primary: a non-legacy (legacy !== true) succeeded result with writes does not carry exactly one artifact_ref with role primary (path `artifact_refs`).
 * 4. evidence_revision_without_alg: some evidence[i].subject.revision has no, a null or an empty alg (path `evidence.{i}.subject.revision.alg`).
 */
export function validateToolResult(raw: unknown): ToolResultValidation {
  if (!isPlainObject(raw)) {
    return refuse('envelope_mismatch', '', `result is not an object (got ${describeJsonKind(raw)})`);
  }
  if (raw.envelope !== TOOL_RESULT_ENVELOPE) {
    return refuse(
      'envelope_mismatch',
      'envelope',
      `envelope is ${raw.envelope === undefined ? 'absent' : JSON.stringify(raw.envelope)}, not "${TOOL_RESULT_ENVELOPE}"`,
    );
  }
  const parsed = ToolResultEnvelope.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = (issue?.path ?? []).map((segment) => String(segment)).join('.');
    return refuse(
      'envelope_mismatch',
      path,
      `claims ${TOOL_RESULT_ENVELOPE} but does not decode: ${path || 'envelope'}: ${issue?.message ?? z.prettifyError(parsed.error)}`,
    );
  }
  const envelope = parsed.data;

  if (envelope.status === 'waiting' && envelope.resume_key === undefined) {
    return refuse('waiting_without_resume_key', 'resume_key', 'a waiting result must carry a resume_key');
  }

  if (envelope.legacy !== true && envelope.status === 'succeeded' && envelope.writes.length > 0) {
    const primaries = envelope.artifact_refs.filter((ref) => ref.role === 'primary').length;
    if (primaries !== 1) {
      return refuse(
        'writes_without_primary',
        'artifact_refs',
        `a succeeded result with ${envelope.writes.length} write(s) must carry exactly one primary artifact_ref, found ${primaries}`,
      );
    }
  }

  const index = envelope.evidence.findIndex((item) => {
    const revision = item.subject?.revision;
    return revision !== undefined && (revision.alg === undefined || revision.alg === '');
  });
  if (index >= 0) {
    const path = `evidence.${index}.subject.revision.alg`;
    return refuse('evidence_revision_without_alg', path, `${path}: evidence must name its revision's alg`);
  }

  return { ok: true, envelope };
}

/**
 * Turns whatever a tool returned into an envelope core can hand to the reducer. Never throws.
 * The same `raw` gives the same answer on every path (dispatcher or delivery); normalizing an
 * envelope this function returned gives it back unchanged.
 *
 * - Legacy: a value that does not claim the contract (any primitive, array, null, undefined,
 *   or an object whose `envelope` field is absent or null) is wrapped as
 *   `{envelope: "raisin.tool-result/1", status: "succeeded", legacy: true, payload: raw, operation_id}`.
 *   Its writes and evidence are untrusted, so they are dropped from the envelope's own lists:
 *   whatever the value held stays inside the opaque `payload` only, and the envelope's
 *   reads/writes/artifact_refs/evidence are empty.
 * - Claimed: an object with a non-null `envelope` field is checked by
 *   {@link validateToolResult}. Accepted: returned decoded, with `operation_id` set to
 *   `operationId` (the runtime knows which operation answered; its value wins). An accepted
 *   envelope that itself says `legacy: true` keeps that mark and its lists (the contract exempts
 *   legacy results from writes_without_primary): readers must treat its writes and evidence as
 *   untrusted, as for a wrapped one.
 * - Refused: replaced by a failed stand-in that carries nothing of the tool's claims as
 *   trusted: status failed, `error_class: "tool_error"`, `retry_policy: {retryable: false}`
 *   (the same tool code gives the same answer), empty reads/writes/artifact_refs/evidence, one
 *   diagnostic `{code: <refusal code>, severity: "error", class: "blocking", message, path?}`,
 *   and the raw value as the opaque payload. The refusal itself is returned as `refusal`, so a
 *   caller that can answer the producer (the delivery route) may refuse instead of recording.
 */
export function normalizeToolResult(raw: unknown, operationId: string): NormalizedToolResult {
  if (!claimsEnvelope(raw)) {
    return { envelope: { ...emptyEnvelope(operationId, 'succeeded'), legacy: true, payload: raw } };
  }
  const result = validateToolResult(raw);
  if (result.ok) {
    return { envelope: { ...result.envelope, operation_id: operationId } };
  }
  const refusal: EnvelopeRefusal = { code: result.code, path: result.path, message: result.message };
  const envelope: ToolResultEnvelope = {
    ...emptyEnvelope(operationId, 'failed'),
    error_class: 'tool_error',
    retry_policy: { retryable: false },
    diagnostics: [
      {
        code: refusal.code,
        severity: 'error',
        class: 'blocking',
        message: refusal.message,
        ...(refusal.path === '' ? {} : { path: refusal.path }),
      },
    ],
    payload: raw,
  };
  return { envelope, refusal };
}

/**
 * A raisin.tool-result/1 envelope with empty lists, the given status and payload (left out when
 * undefined), plus `extra`.
 */
export function envelopeOf(
  status: ToolResultEnvelope['status'],
  payload: unknown,
  extra: Partial<ToolResultEnvelope> = {},
): ToolResultEnvelope {
  return {
    envelope: TOOL_RESULT_ENVELOPE,
    status,
    reads: [],
    writes: [],
    artifact_refs: [],
    evidence: [],
    diagnostics: [],
    suggested_next_actions: [],
    ...(payload !== undefined ? { payload } : {}),
    ...extra,
  };
}

/** An object with an `envelope` field that is neither absent nor null claims the contract. */
function claimsEnvelope(raw: unknown): raw is Record<string, unknown> {
  return isPlainObject(raw) && raw.envelope !== undefined && raw.envelope !== null;
}

function emptyEnvelope(operationId: string, status: 'succeeded' | 'failed'): ToolResultEnvelope {
  return envelopeOf(status, undefined, { operation_id: operationId });
}

function refuse(code: EnvelopeRefusalCode, path: string, message: string): ToolResultValidation {
  return { ok: false, code, path, message };
}
