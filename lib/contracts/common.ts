/**
 * Shared wire shapes used by several contracts: JSON values, locators, revisions, subjects, and
 * the two field helpers that make an optional field accept null.
 * Growth rule (docs/contracts/reducer.md, "Growth rule"): readers ignore fields they do not know,
 * so every object schema here strips unknown keys instead of rejecting them; and a sender may
 * leave out an optional field, which many senders do by writing `null`, so optional fields of
 * the reducer and tool-result contracts accept null and read it as absent.
 */
import { z } from 'zod';
import { refuseLookAlikeWorkspace, refuseUnsafeIdChars } from './clean-text.ts';

/**
 * An optional field that also accepts `null`: absent, `undefined` and `null` all decode as
 * absent (`undefined`), so readers test one case. Only for fields whose value cannot be null
 * itself (a field of `z.unknown()` keeps a null as the value it is). The JSON Schema (io
 * "input") shows the field as not required, of type `T | null`.
 */
export function optionalField<T extends z.ZodType>(schema: T) {
  return schema
    .nullish()
    .transform((value): z.output<T> | undefined => value ?? undefined)
    .optional();
}

/**
 * A field with a default that also accepts `null`: absent, `undefined` and `null` decode as
 * `fallback()` (a fresh value each time, so a default list is never shared between parses).
 * The JSON Schema shows the field as not required, of type `T | null`, with the default.
 */
export function defaultField<T extends z.ZodType>(schema: T, fallback: () => z.output<T>) {
  return schema
    .nullish()
    .meta({ default: fallback() })
    .transform((value): z.output<T> => value ?? fallback());
}

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

/**
 * The most tokens one model turn may report each way (input, output): a billion, past any
 * model's window. Reports above it are refused (`too_big`, the field named); a run's totals
 * then stay exact integers for millions of turns, and saturate at Number.MAX_SAFE_INTEGER
 * rather than ever break the record (core/run-machine/operations.ts).
 */
export const MAX_TOKENS_PER_TURN = 1_000_000_000;

/** A token count of one model turn (see MAX_TOKENS_PER_TURN). */
export const TokenCount = Count.max(MAX_TOKENS_PER_TURN);

/** `a + b` for counters, held at Number.MAX_SAFE_INTEGER instead of passing it. */
export const saturatingAdd = (a: number, b: number): number => Math.min(Number.MAX_SAFE_INTEGER, a + b);

/** A revision names its algorithm: {value, alg}. */
export const Revision = z.object({ value: z.string(), alg: z.string().min(1) });
export type Revision = z.infer<typeof Revision>;

/** A node locator {repository?, branch?, workspace, path, node_id?}. */
export const Locator = z.object({
  repository: optionalField(z.string()),
  branch: optionalField(z.string()),
  workspace: z.string(),
  path: z.string(),
  node_id: optionalField(z.string()),
});
export type Locator = z.infer<typeof Locator>;

/**
 * What a run is about: a node {workspace, path, node_id?}. docs/contracts/run-lifecycle.md,
 * "Subject, principal and admission".
 */
export const Subject = z.object({
  workspace: z.string().min(1),
  path: z.string().min(1),
  node_id: optionalField(z.string()),
});
export type Subject = z.infer<typeof Subject>;

/**
 * The longest a request (an approval, a question) may stay open before it closes `expired`
 * (ms, 30 days): the most a reducer effect's or a client's `expires_in_ms` may be, so that
 * `now + expires_in_ms` stays a safe integer the store can hold. docs/contracts/run-lifecycle.md,
 * "Requests".
 */
export const MAX_REQUEST_EXPIRES_IN_MS = 30 * 24 * 3_600_000;

/** A request's `expires_in_ms`: a whole number of ms in 1..{@link MAX_REQUEST_EXPIRES_IN_MS}. */
export const RequestExpiresInMs = z.number().int().positive().max(MAX_REQUEST_EXPIRES_IN_MS);

/** The longest subject `workspace` a caller may give, in characters (UTF-16 units, as zod counts). */
export const MAX_SUBJECT_WORKSPACE_CHARS = 256;
/** The longest subject `path` a caller may give, in characters (UTF-16 units). */
export const MAX_SUBJECT_PATH_CHARS = 1024;
/** The longest subject `node_id` a caller may give, in characters (UTF-16 units). */
export const MAX_SUBJECT_NODE_ID_CHARS = 256;

/**
 * A subject as a caller gives it (a create, a fork, a delegation, a list by subject): strict
 * (an unknown key is a typo, never silently kept); `workspace` 1..256, `path` 1..1024, `node_id`
 * at most 256 characters (a longer one is refused `too_big`, so a run's events and notifications stay
 * small enough to deliver); none holds a control character or an invisible one (a format
 * character, Unicode Cf, or a line or paragraph separator) (`control_character`, clean-text.ts),
 * and the workspace cannot pass for another (`look_alike_workspace`). Each refusal is 400
 * validation_failed naming the field.
 */
export const CallerSubject = z
  .strictObject({
    workspace: z.string().min(1).max(MAX_SUBJECT_WORKSPACE_CHARS),
    path: z.string().min(1).max(MAX_SUBJECT_PATH_CHARS),
    node_id: optionalField(z.string().max(MAX_SUBJECT_NODE_ID_CHARS)),
  })
  .superRefine((subject, ctx) => {
    refuseUnsafeIdChars(ctx, ['workspace'], subject.workspace);
    refuseLookAlikeWorkspace(ctx, ['workspace'], subject.workspace);
    refuseUnsafeIdChars(ctx, ['path'], subject.path);
    refuseUnsafeIdChars(ctx, ['node_id'], subject.node_id ?? undefined);
  });

/** A sha256 digest in lowercase hex. */
export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'expected a lowercase hex sha256 digest');
