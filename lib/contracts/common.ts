/**
 * Shared wire shapes used by several contracts: JSON values, locators, revisions, subjects.
 * Growth rule (seed agent-run-contracts, "Growth rule"): readers ignore fields they do not know,
 * so every object schema here strips unknown keys instead of rejecting them.
 */
import { z } from 'zod';

/** Any JSON value (what a reducer state, a payload or tool args may hold). */
export const JsonValue: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([
    z.string(),
    z.number(),
    z.boolean(),
    z.null(),
    z.array(JsonValue),
    z.record(z.string(), JsonValue),
  ]),
);
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object with arbitrary fields (opaque to core). */
export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;

/** Non-negative integer counter (seq, revisions, usage). */
export const Count = z.number().int().nonnegative();

/** A revision names its algorithm: {value, alg}. */
export const Revision = z.object({ value: z.string(), alg: z.string().min(1) });
export type Revision = z.infer<typeof Revision>;

/** A node locator {repository?, branch?, workspace, path, node_id?}. */
export const Locator = z.object({
  repository: z.string().optional(),
  branch: z.string().optional(),
  workspace: z.string(),
  path: z.string(),
  node_id: z.string().optional(),
});
export type Locator = z.infer<typeof Locator>;

/** What a run is about: a node {workspace, path, node_id?}. Seed agent-runs, "Subject, principal and admission". */
export const Subject = z.object({
  workspace: z.string().min(1),
  path: z.string().min(1),
  node_id: z.string().optional(),
});
export type Subject = z.infer<typeof Subject>;

/** A sha256 digest in lowercase hex. */
export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'expected a lowercase hex sha256 digest');
