/**
 * Tool registration: identity, input schema and bounded metadata.
 * docs/contracts/tool-result.md, "Tool registration".
 */
import { z } from 'zod';
import { JsonObject } from './common.ts';

/** Semantic version 2.0.0 (the official regular expression, without build metadata limits). */
export const SEMVER_PATTERN =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

export const ToolRisk = z.enum(['low', 'medium', 'high']);
export const ApprovalPolicy = z.enum(['never', 'always', 'when_mutating']);

export const ToolMetadata = z.object({
  mutating: z.boolean(),
  replay_safe: z.boolean(),
  risk: ToolRisk.default('low'),
  timeout_ms: z.number().int().positive().max(900_000).default(30_000),
  max_output_bytes: z
    .number()
    .int()
    .positive()
    .default(256 * 1024),
  approval: ApprovalPolicy.default('never'),
  /**
   * How long (ms) a `waiting` answer's result request stays open before it closes `expired`
   * (default: the deployment's, 24 hours). At most 30 days.
   */
  result_expires_in_ms: z
    .number()
    .int()
    .positive()
    .max(30 * 24 * 3_600_000)
    .optional(),
});
export type ToolMetadata = z.infer<typeof ToolMetadata>;

/** A registration without its handler (the handler is code, not wire data). */
export const ToolRegistration = z.object({
  name: z
    .string()
    .min(1)
    .max(128)
    .refine((s) => s.trim().length > 0, 'name must not be blank'),
  version: z.string().regex(SEMVER_PATTERN, 'version must be a semantic version (e.g. 1.2.3)'),
  description: z.string().max(4000).optional(),
  input_schema: JsonObject,
  metadata: ToolMetadata,
});
export type ToolRegistration = z.infer<typeof ToolRegistration>;

/** What discovery returns: metadata only, never handlers or credentials. */
export const ToolDescriptor = z.object({
  name: z.string(),
  version: z.string(),
  description: z.string().optional(),
  input_schema: JsonObject,
  metadata: ToolMetadata,
});
export type ToolDescriptor = z.infer<typeof ToolDescriptor>;
