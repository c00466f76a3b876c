import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ReducerFixture, ToolResultFixture } from '../../lib/checker/contracts-check.ts';
import {
  buildJsonSchemas,
  JSON_SCHEMA_NAMES,
  jsonSchemaFileName,
  renderJsonSchema,
  TURN_OUTCOME_CONDITIONAL_RULES,
} from '../../lib/checker/json-schemas.ts';
import {
  Control,
  ReducerEvent,
  ReducerRequest,
  ReducerResponse,
  ToolRegistration,
  ToolResultEnvelope,
  TurnOutcome,
} from '../../lib/contracts/index.ts';

const SCHEMAS_DIR = 'schemas';
const FIXTURES = 'test/fixtures/contracts';
const STALE = 'is stale: run `npm run schemas:write` and commit the result';

const schemas = buildJsonSchemas();
const ajv = new Ajv2020({ allErrors: true, strict: false });
for (const [name, schema] of Object.entries(schemas)) ajv.addSchema(schema, name);

function validates(name: string, value: unknown): boolean {
  const validate = ajv.getSchema(name);
  if (validate === undefined) throw new Error(`no schema ${name}`);
  return validate(value) === true;
}

/** Each fixture of a suite: its JSON as written (`raw`) and as the checker decodes it (`fixture`). */
async function readFixtures<T>(
  suite: string,
  schema: z.ZodType<T>,
): Promise<{ file: string; raw: unknown; fixture: T }[]> {
  const dir = join(FIXTURES, suite, 'v1');
  const files = (await readdir(dir)).filter((file) => file.endsWith('.json')).sort();
  return Promise.all(
    files.map(async (file) => {
      const raw: unknown = JSON.parse(await readFile(join(dir, file), 'utf8'));
      return { file, raw, fixture: schema.parse(raw) };
    }),
  );
}

describe('committed JSON Schemas', () => {
  it('generates the 17 contract schemas', () => {
    expect(Object.keys(schemas).sort()).toEqual([...JSON_SCHEMA_NAMES]);
    expect(JSON_SCHEMA_NAMES).toEqual([
      'budgets',
      'control',
      'control-ack',
      'effect',
      'model-turn-error',
      'model-turn-input',
      'model-turn-output',
      'projection',
      'reducer-event',
      'reducer-request',
      'reducer-response',
      'run-event',
      'run-record',
      'tool-registration',
      'tool-result',
      'turn-outcome',
      'usage',
    ]);
  });

  it.each(JSON_SCHEMA_NAMES)('schemas/%s.schema.json matches buildJsonSchemas()', async (name) => {
    const file = join(SCHEMAS_DIR, jsonSchemaFileName(name));
    const committed = await readFile(file, 'utf8').catch(() => `(missing ${file})`);
    const expected = schemas[name];
    if (expected === undefined) throw new Error(`no schema ${name}`);
    expect(committed, `${file} ${STALE}`).toBe(renderJsonSchema(expected));
  });

  it('has no schema file that buildJsonSchemas() no longer produces', async () => {
    const files = (await readdir(SCHEMAS_DIR)).filter((file) => file.endsWith('.schema.json'));
    expect(files.sort(), `schemas/ ${STALE}`).toEqual(JSON_SCHEMA_NAMES.map(jsonSchemaFileName).sort());
  });

  it('is deterministic, with sorted keys and a trailing newline', () => {
    const again = buildJsonSchemas();
    for (const name of JSON_SCHEMA_NAMES) {
      const schema = schemas[name];
      if (schema === undefined) throw new Error(`no schema ${name}`);
      const text = renderJsonSchema(schema);
      expect(text).toBe(renderJsonSchema(again[name] ?? {}));
      expect(text.endsWith('}\n')).toBe(true);
      expect(Object.keys(schema)).toEqual([...Object.keys(schema)].sort());
    }
  });

  it('declares draft 2020-12 and compiles under ajv', () => {
    for (const name of JSON_SCHEMA_NAMES) {
      expect(schemas[name]).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema' });
      expect(ajv.getSchema(name)).toBeTypeOf('function');
    }
  });
});

describe('JSON Schemas agree with the zod schemas', () => {
  it('agrees with ReducerRequest and ReducerEvent on every committed reducer fixture request', async () => {
    for (const { file, raw } of await readFixtures('reducer', ReducerFixture)) {
      const { request } = raw as { request?: { event?: unknown } };
      expect(validates('reducer-request', request), file).toBe(ReducerRequest.safeParse(request).success);
      expect(validates('reducer-event', request?.event), file).toBe(
        ReducerEvent.safeParse(request?.event).success,
      );
    }
  });

  it('agrees with ReducerResponse on every committed reducer fixture response', async () => {
    for (const { file, fixture } of await readFixtures('reducer', ReducerFixture)) {
      expect(validates('reducer-response', fixture.response), file).toBe(
        ReducerResponse.safeParse(fixture.response).success,
      );
    }
  });

  it('agrees with ToolResultEnvelope on every committed tool-result fixture', async () => {
    for (const { file, fixture } of await readFixtures('tool-result', ToolResultFixture)) {
      expect(validates('tool-result', fixture.envelope), file).toBe(
        ToolResultEnvelope.safeParse(fixture.envelope).success,
      );
    }
  });

  it('accepts documents with defaulted fields left out (io input), and refuses a control with an unknown field', () => {
    expect(
      validates('control', {
        control_id: 'c1',
        command: 'approve',
        request_id: 'r',
        subject_digest: 'd',
        x: 1,
      }),
    ).toBe(false);
    expect(
      Control.safeParse({ control_id: 'c1', command: 'approve', request_id: 'r', subject_digest: 'd' })
        .success,
    ).toBe(true);
    expect(validates('usage', {})).toBe(true);
    expect(validates('control', { control_id: 'c1', command: 'launch' })).toBe(false);
  });

  it('carries patterns and bounds of tool registration', () => {
    const registration = {
      name: 'lookup',
      version: '1.2.3',
      input_schema: { type: 'object' },
      metadata: { mutating: false, replay_safe: true },
    };
    for (const value of [registration, { ...registration, version: '1.2' }, { ...registration, name: '' }]) {
      expect(validates('tool-registration', value)).toBe(ToolRegistration.safeParse(value).success);
    }
  });

  describe('turn-outcome conditional rules', () => {
    const base = {
      schema: 'agent.external-runtime.turn-outcome.v1',
      'outcome/ref': 'outcome:1',
      'turn/ref': 'turn:1',
      'binding/ref': 'binding:1',
      'agent/id': 'agent:a',
      'budget/reserved': { tokens: 1000 },
      'budget/charged': { tokens: 120 },
      'usage/fidelity': 'authoritative',
      'selected/at': '2026-01-01T00:00:00Z',
      'selected/by': 'runtime:1',
    };
    const product = { 'product/ref': 'node:/articles/a', 'product/digest': 'sha256:abc' };
    const cases: [string, Record<string, unknown>, boolean][] = [
      [
        'completed with product',
        { status: 'completed', 'reason/code': 'completed', retryability: 'terminal', ...product },
        true,
      ],
      [
        'completed without product/digest (rule 1)',
        { status: 'completed', 'reason/code': 'completed', retryability: 'terminal', 'product/ref': 'p' },
        false,
      ],
      [
        'failed without product',
        { status: 'failed', 'reason/code': 'session-lost', retryability: 'retryable' },
        true,
      ],
      [
        'refused with product/ref (rule 2)',
        { status: 'refused', 'reason/code': 'policy-denied', retryability: 'terminal', 'product/ref': 'p' },
        false,
      ],
      [
        'cancelled with product/digest (rule 2)',
        { status: 'cancelled', 'reason/code': 'cancelled', retryability: 'terminal', 'product/digest': 'd' },
        false,
      ],
      [
        'unknown, reconciliation-required, reason unknown',
        { status: 'unknown', 'reason/code': 'unknown', retryability: 'reconciliation-required' },
        true,
      ],
      [
        'unknown but retryable (rule 3)',
        { status: 'unknown', 'reason/code': 'unknown', retryability: 'retryable' },
        false,
      ],
      [
        'unknown with another reason code (rule 3)',
        { status: 'unknown', 'reason/code': 'session-lost', retryability: 'reconciliation-required' },
        false,
      ],
      [
        'an unknown reason code',
        { status: 'failed', 'reason/code': 'gremlins', retryability: 'terminal' },
        false,
      ],
    ];

    it.each(cases)('%s: JSON Schema and zod both say %s', (_label, fields, valid) => {
      const value = { ...base, ...fields };
      expect(TurnOutcome.safeParse(value).success).toBe(valid);
      expect(validates('turn-outcome', value)).toBe(valid);
    });

    it('carries the seed rules verbatim as allOf if/then', () => {
      expect(schemas['turn-outcome']).toMatchObject({ allOf: TURN_OUTCOME_CONDITIONAL_RULES });
      expect(TURN_OUTCOME_CONDITIONAL_RULES).toHaveLength(3);
    });
  });
});
