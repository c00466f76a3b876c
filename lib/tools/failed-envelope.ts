/**
 * The failed envelopes the dispatcher answers with when a call does not produce a result (unknown
 * tool, denied, invalid args, cancelled, timed out, a thrown error, an output over its bounds).
 * A result the handler did produce is normalized by lib/core's normalizeToolResult, the one
 * normalizer of every path. docs/contracts/tool-result.md, "The tool-result envelope" (the tool
 * error algebra); docs/architecture.md, "The seams of a step" (the observation normalizer).
 */

import type { z } from 'zod';
import type { ToolDiagnostic, ToolErrorClass, ToolResultEnvelope } from '../contracts/index.ts';
import { envelopeOf } from '../core/tool-result-validation.ts';

type Diagnostic = z.infer<typeof ToolDiagnostic>;

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
  return envelopeOf('failed', undefined, {
    operation_id: operationId,
    diagnostics,
    retry_policy: { retryable },
    ...(errorClass === undefined ? {} : { error_class: errorClass }),
  });
}

/** Diagnostic class for a failure class: transient classes say so, input errors are repairable. */
export function diagnosticClassFor(errorClass: ToolErrorClass | undefined): Diagnostic['class'] {
  if (errorClass === 'transient' || errorClass === 'timeout' || errorClass === 'rate_limited')
    return 'transient';
  if (errorClass === 'invalid_input' || errorClass === 'conflict') return 'repairable';
  return 'blocking';
}
