/**
 * A FunctionRegistry on the deployment's own storage: user artifacts are content-addressed in
 * S3 (`functions/{sha256}`) and named by a DynamoDB item (`FN#{function_path}` / `F` holding
 * {kind, hash, size, updated_at}); a listing item (`FNLIST` / `{function_path}`) is written in
 * the same transaction so `list()` is one Query, never a Scan. Built-in artifacts (an
 * InMemoryFunctionRegistry) take precedence and cannot be overwritten. Built-in reducers
 * are artifacts too (docs/contracts/reducer.md, "Binding");
 * docs/contracts/reducer.md, "Validation" (reducer_changed: a run pins the hash it bound, so
 * replacing a path never changes a live run silently).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { type AwsEndpoints, createAwsClients, type LazyClient } from '../aws-clients.ts';
import { raisingStoreUnavailable } from '../aws-faults.ts';
import { SandboxModuleError } from './errors.ts';
import {
  ARTIFACT_KINDS,
  type Artifact,
  type ArtifactKind,
  type ArtifactSummary,
  assertRegistrable,
  type FunctionRegistry,
  hashArtifactBytes,
} from './function-registry.ts';

/** S3 key of an artifact's bytes: `functions/{sha256 hex}`. */
export const artifactObjectKey = (hash: string): string => `functions/${hash}`;
/** DynamoDB key of the item that names the current artifact at a path. */
export const functionItemKey = (functionPath: string) => ({ pk: `FN#${functionPath}`, sk: 'F' });
/** Partition of the listing items (one per path, sort key = the path). */
export const FUNCTION_LIST_PK = 'FNLIST';

/** A stored-registry call refused its input or found the stored artifact broken. `code` is stable; terminal (retrying reads the same item). */
export type StoredRegistryErrorCode =
  /** The path names a built-in artifact; built-ins ship with the package and cannot be replaced. */
  | 'builtin_readonly'
  /** The DynamoDB item names an object that is not in the bucket (a partial write or a deleted object). */
  | 'artifact_missing'
  /** The DynamoDB item at `FN#{path}` does not have the registry's shape. */
  | 'item_invalid';

export class StoredRegistryError extends SandboxModuleError {
  override name = 'StoredRegistryError';
  readonly code: StoredRegistryErrorCode;
  readonly retryable = false;
  readonly function_path: string;
  constructor(code: StoredRegistryErrorCode, functionPath: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.function_path = functionPath;
  }
}

/** The DynamoDB item naming an artifact, parsed at the boundary. */
const FunctionItem = z.object({
  function_path: z.string().min(1),
  kind: z.enum(ARTIFACT_KINDS as [ArtifactKind, ...ArtifactKind[]]),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  size: z.number().int().positive(),
  updated_at: z.number(),
});

export interface StoredFunctionRegistryOptions {
  doc: DynamoDBDocumentClient;
  tableName: string;
  /** The S3 package is imported on the first object read or write (lib/aws-clients.ts). */
  s3: LazyClient<S3Client>;
  bucket: string;
  /** Built-in artifacts: read first, never overwritten. */
  builtins: FunctionRegistry;
  /** Milliseconds since the epoch, for `updated_at` and the item cache (default Date.now). */
  now?: () => number;
  /**
   * How long a looked-up item is reused before it is read again (ms, default 5 000; 0 reads on
   * every `get`). A step reads its run's reducer path at every reducer call; a cached item only
   * delays noticing a newly published artifact (reducer_changed) by up to this long, and a run
   * always executes the bytes of the hash it pinned, never a stale substitute.
   */
  itemCacheMs?: number;
}

/**
 * The stored registry's own request counters (like RunStore.metrics): every DynamoDB and S3
 * request it sends, by kind. A lookup answered from its caches counts nothing.
 */
export interface StoredRegistryMetrics {
  /** Consistent GetItem of a path's item (`FN#{path}`). */
  itemReads: number;
  /** Query pages of the listing (FNLIST). */
  listQueries: number;
  /** GetObject of an artifact's bytes. */
  objectReads: number;
  /** PutObject + TransactWriteItems of a `put`. */
  writes: number;
}

/** A FunctionRegistry on DynamoDB and S3, with its request counters. */
export interface StoredFunctionRegistry extends FunctionRegistry {
  readonly metrics: Readonly<StoredRegistryMetrics>;
}

/** The artifacts the table lists under FNLIST, by path (every page, strongly consistent). */
async function storedSummaries(
  doc: StoredFunctionRegistryOptions['doc'],
  TableName: string,
  metrics: StoredRegistryMetrics,
): Promise<Map<string, ArtifactSummary>> {
  const byPath = new Map<string, ArtifactSummary>();
  let startKey: Record<string, unknown> | undefined;
  do {
    metrics.listQueries += 1;
    const out = await doc.send(
      new QueryCommand({
        TableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': FUNCTION_LIST_PK },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const raw of out.Items ?? []) {
      const item = FunctionItem.safeParse(raw);
      if (!item.success) continue; // a foreign item under FNLIST is not an artifact
      const { function_path, kind, hash, size } = item.data;
      byPath.set(function_path, { function_path, kind, hash, size });
    }
    startKey = out.LastEvaluatedKey;
  } while (startKey !== undefined);
  return byPath;
}

/**
 * Builds the registry. `get` reads the DynamoDB item (strongly consistent) and then the bytes
 * from S3, caching bytes by hash in memory (content-addressed, so a cached entry can never be
 * stale); `put` writes the S3 object first and the items after, so an item never names missing
 * bytes. `put` throws RegistryError(`invalid_artifact`) for an unregistrable artifact and
 * StoredRegistryError(`builtin_readonly`) for a built-in path; `get` throws
 * StoredRegistryError(`artifact_missing`) when the item's object is gone and (`item_invalid`)
 * when the item is malformed; every method throws StoreUnavailable (retryable) when DynamoDB or
 * S3 is unreachable or throttles (lib/aws-faults.ts).
 */
export function createStoredFunctionRegistry(options: StoredFunctionRegistryOptions): StoredFunctionRegistry {
  const metrics: StoredRegistryMetrics = { itemReads: 0, listQueries: 0, objectReads: 0, writes: 0 };
  const { doc, tableName: TableName, s3, bucket: Bucket, builtins } = options;
  const now = options.now ?? (() => Date.now());
  const bytesByHash = new Map<string, Uint8Array>();
  const itemCacheMs = options.itemCacheMs ?? 5_000;
  const items = new Map<string, { item: z.infer<typeof FunctionItem> | null; at: number }>();

  /** The item of `functionPath` (null: none), read again once the cached one is itemCacheMs old. */
  async function readItem(functionPath: string): Promise<z.infer<typeof FunctionItem> | null> {
    const cached = items.get(functionPath);
    if (cached !== undefined && now() - cached.at < itemCacheMs) return cached.item;
    metrics.itemReads += 1;
    const out = await doc.send(
      new GetCommand({ TableName, Key: functionItemKey(functionPath), ConsistentRead: true }),
    );
    if (out.Item === undefined) {
      items.set(functionPath, { item: null, at: now() });
      return null;
    }
    const parsed = FunctionItem.safeParse(out.Item);
    if (!parsed.success) {
      throw new StoredRegistryError(
        'item_invalid',
        functionPath,
        `the item of ${functionPath} is malformed`,
        {
          cause: parsed.error,
        },
      );
    }
    items.set(functionPath, { item: parsed.data, at: now() });
    return parsed.data;
  }

  async function readBytes(functionPath: string, hash: string): Promise<Uint8Array> {
    const cached = bytesByHash.get(hash);
    if (cached !== undefined) return cached.slice();
    const missing = (cause?: unknown) =>
      new StoredRegistryError(
        'artifact_missing',
        functionPath,
        `the artifact ${hash} of ${functionPath} is not in the bucket`,
        cause === undefined ? undefined : { cause },
      );
    let bytes: Uint8Array;
    try {
      metrics.objectReads += 1;
      const [client, { GetObjectCommand }] = await Promise.all([s3.get(), import('@aws-sdk/client-s3')]);
      const out = await client.send(new GetObjectCommand({ Bucket, Key: artifactObjectKey(hash) }));
      if (out.Body === undefined) throw missing();
      bytes = await out.Body.transformToByteArray();
    } catch (err) {
      if (err instanceof StoredRegistryError) throw err;
      const name = (err as { name?: string } | null)?.name;
      if (name === 'NoSuchKey' || name === 'NotFound') throw missing(err);
      throw err;
    }
    // Only bytes that really hash to `hash` enter the cache; others are returned as they are,
    // so the reducer host sees the mismatch (artifact_corrupt) instead of a silent substitute.
    if (hashArtifactBytes(bytes) === hash) bytesByHash.set(hash, bytes.slice());
    return bytes;
  }

  return raisingStoreUnavailable<StoredFunctionRegistry>(
    {
      metrics,

      async get(functionPath) {
        const builtin = await builtins.get(functionPath);
        if (builtin !== null) return builtin;
        const item = await readItem(functionPath);
        if (item === null) return null;
        const bytes = await readBytes(functionPath, item.hash);
        return { function_path: functionPath, kind: item.kind, bytes, hash: item.hash };
      },

      async put(functionPath, kind, bytes): Promise<Artifact> {
        assertRegistrable(functionPath, kind, bytes);
        if ((await builtins.get(functionPath)) !== null) {
          throw new StoredRegistryError(
            'builtin_readonly',
            functionPath,
            `${functionPath} is a built-in function and cannot be replaced`,
          );
        }
        const copy = bytes.slice();
        const hash = hashArtifactBytes(copy);
        metrics.writes += 2;
        await writeArtifact(
          options,
          { function_path: functionPath, kind, hash, size: copy.byteLength, updated_at: now() },
          copy,
        );
        items.delete(functionPath);
        bytesByHash.set(hash, copy.slice());
        return { function_path: functionPath, kind, bytes: copy, hash };
      },

      async list(): Promise<ArtifactSummary[]> {
        const byPath = await storedSummaries(doc, TableName, metrics);
        for (const builtin of await builtins.list()) byPath.set(builtin.function_path, builtin);
        return [...byPath.values()].sort((a, b) =>
          a.function_path < b.function_path ? -1 : a.function_path > b.function_path ? 1 : 0,
        );
      },
    },
    'DynamoDB/S3',
  );
}

/** Writes an artifact: its bytes to the bucket (by hash), then its path's item and listing row. */
async function writeArtifact(
  options: StoredFunctionRegistryOptions,
  item: { function_path: string; kind: string; hash: string; size: number; updated_at: number },
  bytes: Uint8Array,
): Promise<void> {
  const { doc, tableName: TableName, s3, bucket: Bucket } = options;
  const [client, { PutObjectCommand }] = await Promise.all([s3.get(), import('@aws-sdk/client-s3')]);
  await client.send(
    new PutObjectCommand({
      Bucket,
      Key: artifactObjectKey(item.hash),
      Body: bytes,
      ContentType: item.kind === 'wasm' ? 'application/wasm' : 'application/javascript',
    }),
  );
  await doc.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName, Item: { ...functionItemKey(item.function_path), ...item } } },
        { Put: { TableName, Item: { pk: FUNCTION_LIST_PK, sk: item.function_path, ...item } } },
      ],
    }),
  );
}

/** Where a deployment keeps its artifacts: the run table and the payload bucket. */
export interface StoredRegistryConfig {
  endpoints?: AwsEndpoints;
  tableName: string;
  bucketName: string;
}

/**
 * The stored registry for a runtime configuration (the Lambda handlers' `RuntimeConfig` fits),
 * with its own SDK clients: for entry points that must build the registry before
 * `createRuntime` (which takes it as `functions`). No I/O until the first call.
 */
export function storedFunctionRegistryFor(
  config: StoredRegistryConfig,
  builtins: FunctionRegistry,
): StoredFunctionRegistry {
  const clients = createAwsClients(config.endpoints ?? {});
  return createStoredFunctionRegistry({
    doc: clients.doc,
    tableName: config.tableName,
    s3: clients.s3,
    bucket: config.bucketName,
    builtins,
  });
}
