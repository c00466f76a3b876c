/**
 * The checked hand-back over the ports: reads a child's log for the facts core checks its
 * delegation's `returns` against, and compiles `returns.schema` with ajv (draft 2020-12 when the
 * schema says so, draft-07 otherwise, formats checked).
 * docs/contracts/run-lifecycle.md, "Child runs".
 */
import type { ValidateFunction } from 'ajv';
import type { RunEvent, RunRecord, ToolResultEnvelope } from '../contracts/index.ts';
import { checkedHandBackEnvelope, handBackFactsOf } from '../core/delegation.ts';
import { lazySchemaDialects } from '../json-schema-dialects.ts';
import type { RunStore } from './ports.ts';

// As the tool registry's (built on the first schema; lib/json-schema-dialects.ts).
const dialectOf = lazySchemaDialects();
/** Compiled schemas by their JSON text: a parent's children usually share one `returns`. */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 256;
const MAX_ERRORS = 20;

function compile(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = compiled.get(key);
  if (hit !== undefined) return hit;
  const validate = dialectOf(schema).compile(structuredClone(schema));
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(key, validate);
  return validate;
}

/** Why `schema` is not a JSON Schema ajv can compile, or null when it is. */
export function schemaProblem(schema: Record<string, unknown>): string | null {
  try {
    compile(schema);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** `value` against `schema`: one `path: message` per violation (at most 20), [] when valid. */
export function schemaErrors(schema: Record<string, unknown>, value: unknown): string[] {
  const validate = compile(schema);
  if (validate(value)) return [];
  return (validate.errors ?? [])
    .slice(0, MAX_ERRORS)
    .map((e) => `${e.instancePath === '' ? '/' : e.instancePath}: ${e.message ?? 'invalid'}`);
}

const PAGE = 500;

async function allEvents(store: RunStore, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for (;;) {
    const page = await store.readEvents(runId, events.at(-1)?.seq ?? 0, PAGE);
    events.push(...page);
    if (page.length < PAGE) return events;
  }
}

/**
 * The hand-back of `child` (null while it is live), checked against its delegation's `returns`
 * when it has one (its log is read for the facts). Throws what the store throws (retryable).
 */
export async function handBackOf(store: RunStore, child: RunRecord): Promise<ToolResultEnvelope | null> {
  if (child.returns === undefined || child.status !== 'completed') {
    return checkedHandBackEnvelope(child, null, schemaErrors);
  }
  const facts = handBackFactsOf(child, await allEvents(store, child.run_id));
  return checkedHandBackEnvelope(child, facts, schemaErrors);
}
