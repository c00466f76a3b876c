/**
 * The stored function registry on DynamoDB Local and fauxqs S3, and `PUT /functions/...`
 * end to end: an artifact registered over HTTP is bound by a new run and executed by the
 * QuickJS sandbox.
 */
import { randomUUID } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { bearerTokenAuth, createHttpApp } from '../../lib/http/index.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { builtInFunctions, createRuntime } from '../../lib/runtime.ts';
import { hashArtifactBytes, InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';
import {
  artifactObjectKey,
  createStoredFunctionRegistry,
  StoredRegistryError,
} from '../../lib/sandbox/stored-registry.ts';
import { uniqueSubject } from '../support/engine.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
afterAll(() => clients.destroy());

const encode = (s: string) => new TextEncoder().encode(s);
const BUILTIN = '/lib/test/builtin';

function registry(extra: { now?: () => number; itemCacheMs?: number } = {}) {
  return createStoredFunctionRegistry({
    ...extra,
    doc: clients.doc,
    tableName: local.tableName,
    s3: clients.s3,
    bucket: local.bucketName,
    builtins: new InMemoryFunctionRegistry([
      { function_path: BUILTIN, kind: 'js', bytes: encode('export const x = 1;') },
    ]),
  });
}

const uniquePath = () => `/t/${randomUUID()}/reducer`;

describe('stored function registry', () => {
  it('stores bytes content-addressed in S3 and names them with a DynamoDB item', async () => {
    const path = uniquePath();
    const bytes = encode(`export function reduce() { return ${JSON.stringify(path)}; }`);
    const artifact = await registry().put(path, 'js', bytes);
    expect(artifact).toMatchObject({ function_path: path, kind: 'js', hash: hashArtifactBytes(bytes) });

    const object = await (await clients.s3.get()).send(
      new GetObjectCommand({ Bucket: local.bucketName, Key: artifactObjectKey(artifact.hash) }),
    );
    expect(await object.Body?.transformToString()).toBe(new TextDecoder().decode(bytes));
    const item = await clients.doc.send(
      new GetCommand({
        TableName: local.tableName,
        Key: { pk: `FN#${path}`, sk: 'F' },
        ConsistentRead: true,
      }),
    );
    expect(item.Item).toMatchObject({
      kind: 'js',
      hash: artifact.hash,
      size: bytes.byteLength,
      updated_at: expect.any(Number),
    });

    // Another container (a fresh registry, empty cache) reads the same artifact.
    const again = await registry().get(path);
    expect(again?.hash).toBe(artifact.hash);
    expect(new TextDecoder().decode(again?.bytes)).toBe(new TextDecoder().decode(bytes));
  });

  it('replaces the artifact at a path, and keeps the old bytes under their hash', async () => {
    const path = uniquePath();
    const r = registry();
    const v1 = await r.put(path, 'js', encode('export const v = 1;'));
    const v2 = await r.put(path, 'js', encode('export const v = 2;'));
    expect(v2.hash).not.toBe(v1.hash);
    expect((await registry().get(path))?.hash).toBe(v2.hash);
    const old = await (await clients.s3.get()).send(
      new GetObjectCommand({ Bucket: local.bucketName, Key: artifactObjectKey(v1.hash) }),
    );
    expect(await old.Body?.transformToString()).toBe('export const v = 1;');
  });

  it("reuses a looked-up item for itemCacheMs, then sees another container's new artifact", async () => {
    let t = 1_000_000;
    const reader = registry({ now: () => t, itemCacheMs: 5_000 });
    const writer = registry();
    const path = uniquePath();
    const first = await writer.put(path, 'js', encode('export const v = 1;'));
    expect((await reader.get(path))?.hash).toBe(first.hash);
    const second = await writer.put(path, 'js', encode('export const v = 2;'));
    // Within the window the reader still names the first artifact (and serves its own bytes).
    t += 4_999;
    const cached = await reader.get(path);
    expect(cached?.hash).toBe(first.hash);
    expect(new TextDecoder().decode(cached?.bytes)).toBe('export const v = 1;');
    t += 1;
    expect((await reader.get(path))?.hash).toBe(second.hash);
    // With no cache, every get reads the item.
    const eager = registry({ itemCacheMs: 0 });
    expect((await eager.get(path))?.hash).toBe(second.hash);
    const third = await writer.put(path, 'js', encode('export const v = 3;'));
    expect((await eager.get(path))?.hash).toBe(third.hash);
  });

  it('counts its own requests: a cached item and cached bytes cost none', async () => {
    const writer = registry();
    const path = uniquePath();
    await writer.put(path, 'js', encode('export const v = 1;'));
    let t = 0;
    const reader = registry({ now: () => t, itemCacheMs: 5_000 });
    expect(reader.metrics).toEqual({ itemReads: 0, listQueries: 0, objectReads: 0, writes: 0 });

    await reader.get(path);
    await reader.get(path);
    t = 6_000; // the item is read again; the bytes of the same hash are not
    await reader.get(path);

    expect(reader.metrics).toEqual({ itemReads: 2, listQueries: 0, objectReads: 1, writes: 0 });
    expect(writer.metrics.writes).toBe(2);
  });

  it('serves built-ins first and refuses to overwrite them', async () => {
    const r = registry();
    expect((await r.get(BUILTIN))?.kind).toBe('js');
    const refused = await r.put(BUILTIN, 'js', encode('export const evil = 1;')).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(StoredRegistryError);
    expect(refused).toMatchObject({ code: 'builtin_readonly' });
    expect(new TextDecoder().decode((await r.get(BUILTIN))?.bytes)).toBe('export const x = 1;');
  });

  it('lists built-ins and stored artifacts by path, and answers null for an unknown path', async () => {
    const path = uniquePath();
    await registry().put(path, 'js', encode('export const listed = true;'));
    const list = await registry().list();
    const paths = list.map((a) => a.function_path);
    expect(paths).toEqual(expect.arrayContaining([BUILTIN, path]));
    expect(paths).toEqual([...paths].sort());
    expect(list.find((a) => a.function_path === path)).toMatchObject({ kind: 'js', size: 27 });
    expect(await registry().get(uniquePath())).toBeNull();
  });

  it('refuses an unregistrable artifact before writing anything', async () => {
    const path = uniquePath();
    await expect(registry().put(path, 'js', new Uint8Array())).rejects.toMatchObject({
      code: 'invalid_artifact',
    });
    expect(await registry().get(path)).toBeNull();
  });
});

describe('PUT /functions/{path} with the stored registry', () => {
  it('registers a reducer over HTTP that a new run binds and the sandbox runs to completion', async () => {
    const { QueueUrl } = await clients.sqs.send(
      new CreateQueueCommand({ QueueName: `http-fn-${randomUUID().slice(0, 12)}` }),
    );
    const functions = createStoredFunctionRegistry({
      doc: clients.doc,
      tableName: local.tableName,
      s3: clients.s3,
      bucket: local.bucketName,
      builtins: builtInFunctions(),
    });
    const runtime = createRuntime({
      endpoints: local,
      tableName: local.tableName,
      bucketName: local.bucketName,
      queueUrl: QueueUrl ?? '',
      functions,
    });
    try {
      const app = createHttpApp({ ...runtime, auth: bearerTokenAuth('tok'), log: () => {} });
      const headers = { authorization: 'Bearer tok' };
      const source = `export function reduce(req) {
        const rev = req.state_rev + 1;
        if (req.event.kind === 'run_started') {
          return { contract: 'raisin.agent-run.reducer/1', state: { done: true }, state_rev: rev,
            effects: [{ effect_id: rev + ':0', kind: 'complete', outcome: 'succeeded', summary: 'from the bucket' }] };
        }
        return { contract: 'raisin.agent-run.reducer/1', state: req.state, state_rev: req.state_rev, effects: [] };
      }`;
      const path = uniquePath();
      const put = await app.request(`/functions${path}`, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/javascript' },
        body: source,
      });
      expect(put.status).toBe(200);
      const artifact = (await put.json()) as { hash: string };

      const created = await app.request('/runs', {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          subject: uniqueSubject('local-user'),
          reducer: { function_path: path },
          input: null,
        }),
      });
      expect(created.status).toBe(201);
      const { run } = (await created.json()) as {
        run: { run_id: string; reducer: { artifact_hash: string } };
      };
      expect(run.reducer.artifact_hash).toBe(artifact.hash);

      await runtime.engine.stepRun(run.run_id);
      const done = (await (await app.request(`/runs/${run.run_id}`, { headers })).json()) as Record<
        string,
        unknown
      >;
      expect(done).toMatchObject({ status: 'completed', summary: 'from the bucket' });

      const builtin = await app.request(`/functions${AGENT_LOOP_PATH}`, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/javascript' },
        body: 'export const evil = 1;',
      });
      // A reserved system path: refused before the registry is asked.
      expect(builtin.status).toBe(403);
      expect(await builtin.json()).toMatchObject({ code: 'reserved_path' });

      // A control character in a reserved path is not printed in the message (the details carry it).
      const nul = await app.request(`/functions${AGENT_LOOP_PATH}%00%1B[2J`, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/javascript' },
        body: 'export const evil = 1;',
      });
      expect(nul.status).toBe(403);
      const refusal = (await nul.json()) as {
        code: string;
        message: string;
        details: { function_path: string };
      };
      expect(refusal).toMatchObject({
        code: 'reserved_path',
        details: { function_path: `${AGENT_LOOP_PATH}\u0000\u001b[2J` },
      });
      expect(refusal.message).toBe('the requested path is a reserved system path and cannot be written');
    } finally {
      runtime.close();
    }
  });
});
