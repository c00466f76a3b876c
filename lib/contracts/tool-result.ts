/**
 * The tool-result envelope `raisin.tool-result/1`, its 4 refusal codes and the 9 tool error classes.
 * Seed: agent-run-contracts, "The tool-result envelope".
 */
import { z } from 'zod';
import { Locator, Revision } from './common.ts';

export const TOOL_RESULT_ENVELOPE = 'raisin.tool-result/1';

export const TOOL_RESULT_STATUSES = ['succeeded', 'waiting', 'retryable', 'blocked', 'failed'] as const;
export const ToolResultStatus = z.enum(TOOL_RESULT_STATUSES);
export type ToolResultStatus = z.infer<typeof ToolResultStatus>;

/** Refusal codes of the envelope validator. */
export const ENVELOPE_REFUSAL_CODES = [
  'envelope_mismatch',
  'waiting_without_resume_key',
  'writes_without_primary',
  'evidence_revision_without_alg',
] as const;
export const EnvelopeRefusalCode = z.enum(ENVELOPE_REFUSAL_CODES);
export type EnvelopeRefusalCode = z.infer<typeof EnvelopeRefusalCode>;

/** The tool error algebra (ai-tools classification). */
export const TOOL_ERROR_CLASSES = [
  'invalid_input',
  'not_found',
  'permission_denied',
  'conflict',
  'transient',
  'timeout',
  'rate_limited',
  'unsupported',
  'tool_error',
] as const;
export const ToolErrorClass = z.enum(TOOL_ERROR_CLASSES);
export type ToolErrorClass = z.infer<typeof ToolErrorClass>;

/** A revision whose `alg` may be missing on the wire (the validator refuses that for evidence). */
const LooseRevision = z.object({ value: z.string(), alg: z.string().optional() });

export const ToolRead = z.object({
  read_id: z.string(),
  locator: Locator.partial().optional(),
  revision: Revision.optional(),
});
export const ToolWrite = z.object({
  locator: Locator.partial(),
  action: z.enum(['created', 'updated', 'deleted', 'moved']),
  from: Locator.partial().optional(),
  revision: Revision.partial().optional(),
});
export const ArtifactRef = z.object({
  kind: z.string(),
  locator: Locator.partial().optional(),
  revision: Revision.partial().optional(),
  role: z.enum(['primary', 'supporting', 'dependency']),
});
export const Evidence = z.object({
  kind: z.string(),
  subject: z.object({ locator: Locator.partial().optional(), revision: LooseRevision.optional() }).optional(),
  ok: z.boolean().optional(),
  level: z.string().nullable().optional(),
});
export const ToolDiagnostic = z.object({
  code: z.string(),
  severity: z.enum(['error', 'warning', 'info']),
  class: z.enum(['repairable', 'blocking', 'transient']).optional(),
  message: z.string(),
  fix: z.unknown().optional(),
  path: z.string().optional(),
});
export const SuggestedNextAction = z.object({
  action: z.string(),
  args: z.unknown().optional(),
  reason: z.string().optional(),
});
export const RetryPolicy = z.looseObject({ retryable: z.boolean() });

/**
 * The envelope. `legacy: true` marks a result the runtime wrapped because the tool answered in
 * another shape; its writes and evidence are then untrusted. `error_class` is set on failed
 * results the dispatcher classified.
 */
export const ToolResultEnvelope = z.object({
  envelope: z.literal(TOOL_RESULT_ENVELOPE),
  operation_id: z.string().optional(),
  status: ToolResultStatus,
  resume_key: z.string().min(1).optional(),
  reads: z.array(ToolRead).default([]),
  writes: z.array(ToolWrite).default([]),
  artifact_refs: z.array(ArtifactRef).default([]),
  evidence: z.array(Evidence).default([]),
  diagnostics: z.array(ToolDiagnostic).default([]),
  suggested_next_actions: z.array(SuggestedNextAction).default([]),
  retry_policy: RetryPolicy.optional(),
  payload: z.unknown().optional(),
  legacy: z.boolean().optional(),
  error_class: ToolErrorClass.optional(),
});
export type ToolResultEnvelope = z.infer<typeof ToolResultEnvelope>;
