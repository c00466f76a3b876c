/**
 * BlobStore on S3: payloads above the inline threshold, stored content-addressed under their
 * sha256 (`payloads/{sha256}`), so a retried put is idempotent and a read can verify the bytes.
 * docs/reference/storage.md.
 */
import { createHash } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import type { LazyClient } from '../aws-clients.ts';
import { raisingStoreUnavailable } from '../aws-faults.ts';

/** What an item keeps instead of a large payload. */
export interface BlobRef {
  digest: string;
  size: number;
  media_type: string;
  /** The first characters of the payload, for humans and listings. */
  preview: string;
}

export interface BlobStore {
  /** Stores `body` (idempotent) and returns its reference. */
  put(body: string, mediaType: string): Promise<BlobRef>;
  /** Reads a payload back; throws BlobIntegrityError if the bytes do not match the digest. */
  get(ref: BlobRef): Promise<string>;
}

export class BlobIntegrityError extends Error {
  override name = 'BlobIntegrityError';
  readonly code = 'blob_integrity';
}

/** How many characters of a payload a BlobRef keeps as its preview. */
export const PREVIEW_CHARS = 200;

const digestOf = (body: string) => createHash('sha256').update(body).digest('hex');

/** The reference a payload is stored under: its sha256 (hex), size in UTF-8 bytes, media type, preview. */
export function blobRefOf(body: string, mediaType: string): BlobRef {
  return {
    digest: digestOf(body),
    size: Buffer.byteLength(body),
    media_type: mediaType,
    preview: body.slice(0, PREVIEW_CHARS),
  };
}

/** Whether `body` is the payload `ref` names (its sha256 matches). */
export function matchesRef(body: string, ref: BlobRef): boolean {
  return digestOf(body) === ref.digest;
}

/**
 * The blob store over S3 (`payloads/{sha256}` in `bucket`). The S3 package is imported on the
 * first put or get (the client is lazy, lib/aws-clients.ts). Rejects with StoreUnavailable
 * (retryable) when S3 is unreachable, throttles (SlowDown) or fails, or BlobIntegrityError when a
 * read body does not match its digest.
 */
export function createS3BlobStore(client: LazyClient<S3Client>, bucket: string): BlobStore {
  return raisingStoreUnavailable<BlobStore>(
    {
      async put(body, mediaType) {
        const ref = blobRefOf(body, mediaType);
        const [s3, { PutObjectCommand }] = await Promise.all([client.get(), import('@aws-sdk/client-s3')]);
        await s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: `payloads/${ref.digest}`,
            Body: body,
            ContentType: mediaType,
          }),
        );
        return ref;
      },
      async get(ref) {
        const [s3, { GetObjectCommand }] = await Promise.all([client.get(), import('@aws-sdk/client-s3')]);
        const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `payloads/${ref.digest}` }));
        const body = (await out.Body?.transformToString('utf8')) ?? '';
        if (!matchesRef(body, ref)) {
          throw new BlobIntegrityError(`payload ${ref.digest} does not match its digest`);
        }
        return body;
      },
    },
    'S3',
  );
}
