/**
 * The envelope validator and normalizer of `raisin.tool-result/1`.
 * Seed: agent-run-contracts, "The tool-result envelope" (refusal codes, legacy wrapping).
 */
import { z } from 'zod';
import { type EnvelopeRefusalCode, TOOL_RESULT_ENVELOPE, ToolResultEnvelope } from '../contracts/index.ts';

/** Why a claimed envelope was refused: one of the 4 refusal codes and a readable message. */
export type EnvelopeRefusal = { code: EnvelopeRefusalCode; message: string };

export type ToolResultValidation =
  | { ok: true; envelope: ToolResultEnvelope }
  | ({ ok: false } & EnvelopeRefusal);

/** What {@link normalizeToolResult} returns: always an envelope; `refusal` when the tool's own was refused. */
export type NormalizedToolResult = { envelope: ToolResultEnvelope; refusal?: EnvelopeRefusal };

/**
 * Checks a value that claims to be a `raisin.tool-result/1` envelope and returns it decoded
 * (defaults applied, unknown fields dropped) or the first refusal. Never throws.
 *
 * Checked in this order; the first violation wins:
 * 1. envelope_mismatch: not an object, `envelope` is not "raisin.tool-result/1" (a legacy value without the field included), or the object does not decode (bad status, read revision without alg, ...).
 * 2. waiting_without_resume_key: status is waiting and resume_key is absent.
 * 3. writes_without_primary: a non-legacy (legacy !== true) succeeded result with writes does not carry exactly one artifact_ref with role primary.
 * 4. evidence_revision_without_alg: some evidence[i].subject.revision has no (or an empty) alg.
 */
export function validateToolResult(raw: unknown): ToolResultValidation {
  if (!isPlainObject(raw)) {
    return refuse('envelope_mismatch', `result is not an object (got ${describe(raw)})`);
  }
  if (raw.envelope !== TOOL_RESULT_ENVELOPE) {
    return refuse(
      'envelope_mismatch',
      `envelope is ${raw.envelope === undefined ? 'absent' : JSON.stringify(raw.envelope)}, not "${TOOL_RESULT_ENVELOPE}"`,
    );
  }
  const parsed = ToolResultEnvelope.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = (issue?.path ?? []).map((segment) => String(segment)).join('.');
    return refuse(
      'envelope_mismatch',
      `claims ${TOOL_RESULT_ENVELOPE} but does not decode: ${path || 'envelope'}: ${issue?.message ?? z.prettifyError(parsed.error)}`,
    );
  }
  const envelope = parsed.data;

  if (envelope.status === 'waiting' && envelope.resume_key === undefined) {
    return refuse('waiting_without_resume_key', 'a waiting result must carry a resume_key');
  }

  if (envelope.legacy !== true && envelope.status === 'succeeded' && envelope.writes.length > 0) {
    const primaries = envelope.artifact_refs.filter((ref) => ref.role === 'primary').length;
    if (primaries !== 1) {
      return refuse(
        'writes_without_primary',
        `a succeeded result with ${envelope.writes.length} write(s) must carry exactly one primary artifact_ref, found ${primaries}`,
      );
    }
  }

  const index = envelope.evidence.findIndex((item) => {
    const revision = item.subject?.revision;
    return revision !== undefined && (revision.alg === undefined || revision.alg === '');
  });
  if (index >= 0) {
    return refuse('evidence_revision_without_alg', `evidence.${index}.subject.revision must name its alg`);
  }

  return { ok: true, envelope };
}

/**
 * Turns whatever a tool returned into an envelope core can hand to the reducer. Never throws.
 *
 * - A value that is not an object with an own `envelope` field (any primitive, array, null,
 *   undefined, or an object without the field) is a legacy result: it is wrapped as
 *   `{envelope: "raisin.tool-result/1", status: "succeeded", legacy: true, payload: raw, operation_id}`.
 *   Its writes and evidence, if it had such fields, are not trusted: they stay inside the
 *   opaque `payload` only, and the envelope's writes/evidence/artifact_refs/reads are empty.
 * - A value with an `envelope` field claims the contract and is checked by
 *   {@link validateToolResult}. Accepted: returned with `operation_id` set to `operationId` (the
 *   runtime knows which operation answered; its value wins). Refused: replaced by a failed
 *   envelope, `error_class: "tool_error"`, not retryable, one error diagnostic whose code is the
 *   refusal code, the raw value as payload; the refusal is also returned as `refusal`.
 */
export function normalizeToolResult(raw: unknown, operationId: string): NormalizedToolResult {
  if (!isPlainObject(raw) || !Object.hasOwn(raw, 'envelope')) {
    return { envelope: { ...emptyEnvelope(operationId, 'succeeded'), legacy: true, payload: raw } };
  }
  const result = validateToolResult(raw);
  if (result.ok) {
    return { envelope: { ...result.envelope, operation_id: operationId } };
  }
  const refusal: EnvelopeRefusal = { code: result.code, message: result.message };
  const envelope: ToolResultEnvelope = {
    ...emptyEnvelope(operationId, 'failed'),
    error_class: 'tool_error',
    retry_policy: { retryable: false },
    diagnostics: [{ code: refusal.code, severity: 'error', class: 'blocking', message: refusal.message }],
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

function emptyEnvelope(operationId: string, status: 'succeeded' | 'failed'): ToolResultEnvelope {
  return envelopeOf(status, undefined, { operation_id: operationId });
}

function refuse(code: EnvelopeRefusalCode, message: string): ToolResultValidation {
  return { ok: false, code, message };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
