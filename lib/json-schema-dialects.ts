/**
 * The ajv instances that compile JSON Schemas (a tool's `input_schema`, a delegation's
 * `returns.schema`): draft 2020-12 when the schema's `$schema` says so, draft-07 otherwise, formats
 * checked (ajv-formats), `addUsedSchema: false` so a schema with an `$id` compiles again after
 * its owner's cache clears. Each dialect is built on its first schema: building one adds ajv's
 * meta-schemas, which a process that compiles none (the live and stream functions) never pays
 * for at start-up.
 */
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const AJV_OPTIONS = { strict: false, allErrors: true, addUsedSchema: false } as const;

/** Returns the picker of one owner's pair of instances: the ajv that compiles `schema`. */
export function lazySchemaDialects(): (schema: Record<string, unknown>) => Ajv | Ajv2020 {
  let draft07: Ajv | undefined;
  let draft2020: Ajv2020 | undefined;
  return (schema) => {
    if (typeof schema.$schema === 'string' && schema.$schema.includes('2020-12')) {
      draft2020 ??= withFormats(new Ajv2020(AJV_OPTIONS));
      return draft2020;
    }
    draft07 ??= withFormats(new Ajv(AJV_OPTIONS));
    return draft07;
  };
}

function withFormats<T extends Ajv | Ajv2020>(ajv: T): T {
  addFormats.default(ajv);
  return ajv;
}
