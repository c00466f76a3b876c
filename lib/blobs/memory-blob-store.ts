/**
 * BlobStore in memory, content-addressed like the S3 adapter (a put is idempotent, a get checks
 * the digest). For the memory run store: a test and local-development aid, never production.
 */
import { createHash } from 'node:crypto';
import { BlobIntegrityError, type BlobRef, type BlobStore, PREVIEW_CHARS } from './blob-store.ts';

export function createMemoryBlobStore(): BlobStore & { readonly size: number } {
  const bodies = new Map<string, string>();
  return {
    get size() {
      return bodies.size;
    },
    async put(body, mediaType): Promise<BlobRef> {
      const digest = createHash('sha256').update(body).digest('hex');
      bodies.set(digest, body);
      return {
        digest,
        size: Buffer.byteLength(body),
        media_type: mediaType,
        preview: body.slice(0, PREVIEW_CHARS),
      };
    },
    async get(ref) {
      const body = bodies.get(ref.digest);
      if (body === undefined || createHash('sha256').update(body).digest('hex') !== ref.digest) {
        throw new BlobIntegrityError(`payload ${ref.digest} is missing or does not match its digest`);
      }
      return body;
    },
  };
}
