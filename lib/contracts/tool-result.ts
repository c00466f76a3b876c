/**
 * The tool-result envelope `raisin.tool-result/1`, its 4 refusal codes and the 9 tool error classes.
 * docs/contracts/tool-result.md, "The tool-result envelope".
 */
import { z } from 'zod';
import { defaultField, optionalField, Revision } from './common.ts';

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

/**
 * Every optional field of the envelope accepts null and reads it as absent; every list accepts
 * null and reads it as empty (growth rule, see common.ts). So a diagnostic with `class: null`
 * decodes, and an evidence revision with `alg: null` has no alg (evidence_revision_without_alg).
 */

/** A locator whose every field may be absent or null (reads, writes and artifacts name what they can). */
const PartialLocator = z.object({
  repository: optionalField(z.string()),
  branch: optionalField(z.string()),
  workspace: optionalField(z.string()),
  path: optionalField(z.string()),
  node_id: optionalField(z.string()),
});
/** A revision whose parts may be absent or null; an `alg` that is given must not be empty. */
const PartialRevision = z.object({
  value: optionalField(z.string()),
  alg: optionalField(z.string().min(1)),
});
/** A revision whose `alg` may be missing on the wire (the validator refuses that for evidence). */
const LooseRevision = z.object({ value: z.string(), alg: optionalField(z.string()) });

export const ToolRead = z.object({
  read_id: z.string(),
  locator: optionalField(PartialLocator),
  revision: optionalField(Revision),
});
export const ToolWrite = z.object({
  locator: PartialLocator,
  action: z.enum(['created', 'updated', 'deleted', 'moved']),
  from: optionalField(PartialLocator),
  revision: optionalField(PartialRevision),
});
export const ArtifactRef = z.object({
  kind: z.string(),
  locator: optionalField(PartialLocator),
  revision: optionalField(PartialRevision),
  role: z.enum(['primary', 'supporting', 'dependency']),
});
export const Evidence = z.object({
  kind: z.string(),
  subject: optionalField(
    z.object({ locator: optionalField(PartialLocator), revision: optionalField(LooseRevision) }),
  ),
  ok: optionalField(z.boolean()),
  /**
   * An open string the domain defines; null is a value here (the contract's example sends `level:
   * null`).
   */
  level: z.string().nullable().optional(),
});
export const ToolDiagnostic = z.object({
  code: z.string(),
  severity: z.enum(['error', 'warning', 'info']),
  class: optionalField(z.enum(['repairable', 'blocking', 'transient'])),
  message: z.string(),
  fix: z.unknown().optional(),
  path: optionalField(z.string()),
});
export const SuggestedNextAction = z.object({
  action: z.string(),
  args: z.unknown().optional(),
  reason: optionalField(z.string()),
});
export const RetryPolicy = z.looseObject({ retryable: z.boolean() });

/**
 * The envelope. `legacy: true` marks a result the runtime wrapped because the tool answered in
 * another shape; its writes and evidence are then untrusted. `error_class` is set on failed
 * results the dispatcher classified. `resume_key` absent, null or "" all mean no resume key (so
 * a waiting result without one is refused waiting_without_resume_key, not envelope_mismatch).
 */
export const ToolResultEnvelope = z.object({
  envelope: z.literal(TOOL_RESULT_ENVELOPE),
  operation_id: optionalField(z.string()),
  status: ToolResultStatus,
  resume_key: z
    .string()
    .nullish()
    .transform((key) => (key === null || key === '' ? undefined : key))
    .optional(),
  reads: defaultField(z.array(ToolRead), () => []),
  writes: defaultField(z.array(ToolWrite), () => []),
  artifact_refs: defaultField(z.array(ArtifactRef), () => []),
  evidence: defaultField(z.array(Evidence), () => []),
  diagnostics: defaultField(z.array(ToolDiagnostic), () => []),
  suggested_next_actions: defaultField(z.array(SuggestedNextAction), () => []),
  retry_policy: optionalField(RetryPolicy),
  payload: z.unknown().optional(),
  legacy: optionalField(z.boolean()),
  error_class: optionalField(ToolErrorClass),
});
export type ToolResultEnvelope = z.infer<typeof ToolResultEnvelope>;
