/**
 * The JSON Schema (draft 2020-12, `io: input`) of the agent loop's context, derived from the zod
 * schema in context-schema.ts: the form of the one description that the artifact carries. In Node
 * this module computes it; the artifact build (lib/reducers/build.ts) replaces the module by the
 * computed value, so the sandbox gets the same schema without zod. context.ts reads a context
 * against it.
 *
 * Only the keywords `SchemaNode` lists are allowed: deriving a schema that uses another one (a
 * union, a pattern, a refinement...) throws, so the reader never skips a rule it cannot check.
 */
import { z } from 'zod';
import { AgentLoopContext } from './context-schema.ts';

/**
 * One node of the schema subset the reader interprets. `propertyNames` is always
 * `{type: 'string'}` and `additionalProperties` always `{}`: both hold of every JSON object.
 */
const SchemaNode = z.strictObject({
  type: z.enum(['object', 'array', 'string', 'integer', 'number', 'boolean']),
  enum: z.array(z.unknown()).optional(),
  default: z.unknown().optional(),
  minLength: z.number().optional(),
  minimum: z.number().optional(),
  exclusiveMinimum: z.number().optional(),
  maximum: z.number().optional(),
  get properties() {
    return z.record(z.string(), SchemaNode).optional();
  },
  required: z.array(z.string()).optional(),
  get items() {
    return SchemaNode.optional();
  },
  propertyNames: z.strictObject({ type: z.literal('string') }).optional(),
  additionalProperties: z.strictObject({}).optional(),
});
export type SchemaNode = z.infer<typeof SchemaNode>;

/**
 * Derives the subset schema of a zod schema. `z.int()` bounds integers by the safe range; JSON
 * numbers beyond it are still integers, so those two bounds are left out (the reducer keeps
 * such a value, as it always did). Throws (zod's error) when the schema leaves the subset.
 */
export function deriveSchemaNode(schema: z.ZodType): SchemaNode {
  const json = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'throw',
    override: ({ jsonSchema }) => {
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
    },
  });
  const { $schema: _dialect, ...node } = json;
  return SchemaNode.parse(node);
}

/** The context schema, as context.ts reads it. */
export const CONTEXT_JSON_SCHEMA: SchemaNode = deriveSchemaNode(AgentLoopContext);
