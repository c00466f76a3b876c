/**
 * No storage key in a public shape: neither the OpenAPI document nor the JSON Schemas
 * of schemas/ name a field of STORAGE_FIELDS (or a DynamoDB key attribute) anywhere, and the
 * answers about a run whose stored record and checkpoints do carry `state_at` leave it out, over
 * HTTP and through the client.
 */
import { describe, expect, it } from 'vitest';
import { buildJsonSchemas } from '../../lib/checker/json-schemas.ts';
import { createClient } from '../../lib/client/index.ts';
import { STORAGE_FIELDS } from '../../lib/contracts/index.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { createHttpApp } from '../../lib/http/app.ts';
import { bearerTokenAuth } from '../../lib/http/auth.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';
import { alice } from '../support/hosts.ts';
import { runLongConversation } from '../support/long-conversation.ts';

/** Every property name declared anywhere in `schema` (properties, nested at any depth). */
function propertyNames(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) propertyNames(v, out);
  else if (typeof value === 'object' && value !== null) {
    const properties = (value as { properties?: unknown }).properties;
    if (typeof properties === 'object' && properties !== null) {
      for (const name of Object.keys(properties)) out.add(name);
    }
    for (const v of Object.values(value)) propertyNames(v, out);
  }
  return out;
}

/** Property names that are storage keys: STORAGE_FIELDS and DynamoDB key attributes (pk, sk, gsi1pk, ...). */
function storageKeys(names: Iterable<string>): string[] {
  const field = new Set<string>(STORAGE_FIELDS);
  return [...names].filter((n) => field.has(n) || /^(pk|sk|gsi\d*_?(pk|sk)?)$/i.test(n)).sort();
}

const appOf = (engine: Engine) =>
  createHttpApp({
    engine,
    functions: new InMemoryFunctionRegistry(),
    tools: { list: () => [] },
    auth: bearerTokenAuth('t', alice.principal),
    log: () => {},
  });

describe('the public shapes', () => {
  it('name no storage key anywhere in the OpenAPI document', async () => {
    const response = await appOf({} as Engine).request('/openapi.json');
    const names = propertyNames(await response.json());
    expect(names.has('state_rev')).toBe(true);
    expect(storageKeys(names)).toEqual([]);
    // The check finds a storage key where one is declared.
    expect(storageKeys(propertyNames({ properties: { run: { properties: { state_at: {} } } } }))).toEqual([
      'state_at',
    ]);
  });

  it('name no storage key in the JSON Schemas of the wire contracts (schemas/)', () => {
    const names = propertyNames(Object.values(buildJsonSchemas()));
    expect(names.has('state_rev')).toBe(true);
    expect(storageKeys(names)).toEqual([]);
  });

  it("leave the store's state_at out of the run and checkpoints answered over HTTP and by the client", async () => {
    // Prepare: a run whose stored record and checkpoints carry state_at.
    const c = await runLongConversation(12, { compaction: { max_input_tokens: 1500 } });
    const stored = await c.store.getRun(c.run.run_id);
    const checkpoints = await c.store.listCheckpoints(c.run.run_id);
    expect(stored?.state_at).toBeTypeOf('string');
    const located = checkpoints.find((cp) => cp.state_at !== undefined);
    expect(located).toBeDefined();
    const app = appOf(c.engine);
    const get = async (path: string) =>
      (await app.request(path, { headers: { authorization: 'Bearer t' } })).json() as Promise<
        Record<string, unknown>
      >;

    // Act
    const run = await get(`/runs/${c.run.run_id}`);
    const list = (await get(`/runs?status=completed`)) as { runs: Record<string, unknown>[] };
    const listed = (await get(`/runs/${c.run.run_id}/checkpoints`)) as {
      checkpoints: Record<string, unknown>[];
    };
    const one = await get(`/runs/${c.run.run_id}/checkpoints/${located?.n}`);
    const client = createClient({ baseUrl: 'http://api.test', token: 't', fetch: (r) => app.fetch(r) });

    // Assess
    expect(run).toMatchObject({ run_id: c.run.run_id, state_rev: stored?.state_rev });
    expect(run).not.toHaveProperty('state_at');
    expect(list.runs.find((r) => r.run_id === c.run.run_id)).not.toHaveProperty('state_at');
    expect(listed.checkpoints).toHaveLength(checkpoints.length);
    for (const cp of listed.checkpoints) expect(cp).not.toHaveProperty('state_at');
    expect(one).toMatchObject({ n: located?.n, state_rev: located?.state_rev });
    expect(one).not.toHaveProperty('state_at');
    expect(await client.getRun(c.run.run_id)).not.toHaveProperty('state_at');
    expect(await client.getRunCheckpoint(c.run.run_id, located?.n ?? -1)).not.toHaveProperty('state_at');
  }, 60_000);
});
