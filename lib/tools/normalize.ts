/**
 * The observation normalizer: turns whatever a handler produced into a `raisin.tool-result/1`
 * envelope. Minimal on purpose (the full envelope validator with its refusal codes lives in
 * lib/core/tool-result-validation.ts). Seed: agent-run-contracts, "The tool-result envelope";
 * deterministic-seams, "The observation normalizer".
 */

import type { z } from 'zod';
import {
  TOOL_RESULT_ENVELOPE,
  type ToolDiagnostic,
  type ToolErrorClass,
  ToolResultEnvelope,
} from '../contracts/index.ts';

type Diagnostic = z.infer<typeof ToolDiagnostic>;

export { envelopeOf } from '../core/tool-result-validation.ts';

/**
 * A failed envelope: status `failed`, `retry_policy.retryable`, and the diagnostics given (at
 * least one, whose code is the stable failure code). `errorClass` is omitted only for a
 * cancellation (not a tool fault). No payload.
 */

export function failedEnvelope(
  operationId: string,
  errorClass: ToolErrorClass | undefined,
  retryable: boolean,
  diagnostics: [Diagnostic, ...Diagnostic[]],
): ToolResultEnvelope {
  return {
    envelope: TOOL_RESULT_ENVELOPE,
    operation_id: operationId,
    status: 'failed',
    reads: [],
    writes: [],
    artifact_refs: [],
    evidence: [],
    diagnostics,
    suggested_next_actions: [],
    retry_policy: { retryable },
    ...(errorClass === undefined ? {} : { error_class: errorClass }),
  };
}

/** Diagnostic class for a failure class: transient classes say so, input errors are repairable. */
export function diagnosticClassFor(errorClass: ToolErrorClass | undefined): Diagnostic['class'] {
  if (errorClass === 'transient' || errorClass === 'timeout' || errorClass === 'rate_limited')
    return 'transient';
  if (errorClass === 'invalid_input' || errorClass === 'conflict') return 'repairable';
  return 'blocking';
}

/** What normalizing a handler's JSON result gave. */
export type NormalizedResult =
  | { ok: true; envelope: ToolResultEnvelope }
  /** The result claims to be an envelope but does not parse as one. */
  | { ok: false; code: 'envelope_invalid' };

/**
 * A result whose `envelope` field is `raisin.tool-result/1` is parsed as an envelope (unknown
 * fields stripped, defaults applied) and passes through with `operation_id` set to this
 * operation's; anything else (any JSON value) is wrapped as a succeeded envelope with
 * `legacy: true` and the value as `payload`. `result` must already be plain JSON.
 */
export function normalizeResult(result: unknown, operationId: string): NormalizedResult {
  if (isEnvelopeClaim(result)) {
    const parsed = ToolResultEnvelope.safeParse(result);
    if (!parsed.success) return { ok: false, code: 'envelope_invalid' };
    return { ok: true, envelope: { ...parsed.data, operation_id: operationId } };
  }
  return {
    ok: true,
    envelope: {
      envelope: TOOL_RESULT_ENVELOPE,
      operation_id: operationId,
      status: 'succeeded',
      reads: [],
      writes: [],
      artifact_refs: [],
      evidence: [],
      diagnostics: [],
      suggested_next_actions: [],
      payload: result,
      legacy: true,
    },
  };
}

function isEnvelopeClaim(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    (value as { envelope?: unknown }).envelope === TOOL_RESULT_ENVELOPE
  );
}
