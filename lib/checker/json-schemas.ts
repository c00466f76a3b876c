/**
 * JSON Schemas (draft 2020-12) of the wire contracts, generated from the zod schemas in
 * lib/contracts so that non-TypeScript implementations (Starlark, WebAssembly reducers, tools in
 * other languages) can validate what they send. `bin/write-schemas.ts` writes them to
 * `schemas/<name>.schema.json`; test/unit/schemas.test.ts fails when the committed files drift.
 *
 * Every schema is generated with `io: "input"`: it describes what a sender may put on the wire,
 * so fields with a zod default are optional, and unknown fields are allowed (growth rule; zod
 * objects strip them, they never reject them). A document core emits after parsing (defaults
 * filled in) is valid under the same schema. Refinements zod cannot express are dropped by
 * `z.toJSONSchema`, except turn-outcome's three conditional rules, added back as `allOf` of
 * `if`/`then` exactly as the contract states them (docs/contracts/turn-outcome.md,
 * "The three rules of the schema").
 */
import { z } from 'zod';
import {
  Budgets,
  Control,
  ControlAck,
  Effect,
  ModelTurnError,
  ModelTurnInput,
  ModelTurnOutput,
  Projection,
  PublicRunRecord,
  ReducerEvent,
  ReducerRequest,
  ReducerResponse,
  RunEvent,
  ToolRegistration,
  ToolResultEnvelope,
  TurnOutcome,
  Usage,
} from '../contracts/index.ts';

/** The three conditional rules of turn-outcome v1, as the contract states them. */
export const TURN_OUTCOME_CONDITIONAL_RULES = [
  {
    if: { required: ['status'], properties: { status: { const: 'completed' } } },
    // biome-ignore lint/suspicious/noThenProperty: the JSON Schema `then` keyword (a plain object, not a thenable)
    then: { required: ['product/ref', 'product/digest'] },
  },
  {
    if: {
      required: ['status'],
      properties: { status: { enum: ['refused', 'failed', 'cancelled', 'unknown'] } },
    },
    // biome-ignore lint/suspicious/noThenProperty: the JSON Schema `then` keyword (a plain object, not a thenable)
    then: { not: { anyOf: [{ required: ['product/ref'] }, { required: ['product/digest'] }] } },
  },
  {
    if: { required: ['status'], properties: { status: { const: 'unknown' } } },
    // biome-ignore lint/suspicious/noThenProperty: the JSON Schema `then` keyword (a plain object, not a thenable)
    then: {
      properties: {
        retryability: { const: 'reconciliation-required' },
        'reason/code': { const: 'unknown' },
      },
    },
  },
];

/** Schema name (the file is `schemas/<name>.schema.json`) → zod schema, and a title for each. */
const CONTRACTS: Record<string, { schema: z.ZodType; title: string }> = {
  'reducer-request': { schema: ReducerRequest, title: 'raisin.agent-run.reducer/1 request' },
  'reducer-response': { schema: ReducerResponse, title: 'raisin.agent-run.reducer/1 response' },
  'reducer-event': { schema: ReducerEvent, title: 'raisin.agent-run.reducer/1 event' },
  effect: { schema: Effect, title: 'raisin.agent-run.reducer/1 effect' },
  projection: { schema: Projection, title: 'raisin.agent-run.reducer/1 projection' },
  'tool-result': { schema: ToolResultEnvelope, title: 'raisin.tool-result/1 envelope' },
  'model-turn-input': { schema: ModelTurnInput, title: 'model-turn function input' },
  'model-turn-output': { schema: ModelTurnOutput, title: 'model-turn function output' },
  'model-turn-error': { schema: ModelTurnError, title: 'model-turn function error' },
  control: { schema: Control, title: 'run control' },
  'control-ack': { schema: ControlAck, title: 'run control acknowledgement' },
  'run-record': { schema: PublicRunRecord, title: 'run record (as the API answers it: no storage key)' },
  budgets: { schema: Budgets, title: 'run budgets' },
  usage: { schema: Usage, title: 'run usage' },
  'tool-registration': { schema: ToolRegistration, title: 'tool registration' },
  'turn-outcome': { schema: TurnOutcome, title: 'agent.external-runtime.turn-outcome.v1' },
  'run-event': { schema: RunEvent, title: 'run event' },
};

/** The names {@link buildJsonSchemas} returns, in file order. */
export const JSON_SCHEMA_NAMES: readonly string[] = Object.keys(CONTRACTS).sort();

/**
 * Every contract's JSON Schema by name (see {@link JSON_SCHEMA_NAMES}), keys sorted recursively
 * so the output is stable. Pure and deterministic; throws only if a contract gains a zod type
 * JSON Schema cannot represent (a programming error, caught by the schemas test).
 */
export function buildJsonSchemas(): Record<string, object> {
  const out: Record<string, object> = {};
  for (const [name, contract] of Object.entries(CONTRACTS).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const generated = z.toJSONSchema(contract.schema, { target: 'draft-2020-12', io: 'input' });
    const schema: Record<string, unknown> = { ...generated, title: contract.title };
    if (name === 'turn-outcome') schema.allOf = TURN_OUTCOME_CONDITIONAL_RULES;
    out[name] = sortKeys(schema);
  }
  return out;
}

/** The file name of a schema: `<name>.schema.json`. */
export function jsonSchemaFileName(name: string): string {
  return `${name}.schema.json`;
}

/** The exact text written to a schema file: 2-space indented JSON and a trailing newline. */
export function renderJsonSchema(schema: object): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}

/** A deep copy of a JSON object with every object's keys in code-unit order (arrays keep their order). */
function sortKeys(value: object): Record<string, unknown> {
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([key, item]) => [key, sortValue(item)]));
}

function sortValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortValue);
  if (typeof value === 'object' && value !== null) return sortKeys(value);
  return value;
}
