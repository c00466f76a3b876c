/**
 * BlobStore in memory, content-addressed like the S3 adapter (a put is idempotent, a get checks
 * the digest). For the memory run store: a test and local-development aid, never production.
 */
import { BlobIntegrityError, type BlobRef, type BlobStore, blobRefOf, matchesRef } from './blob-store.ts';

export function createMemoryBlobStore(): BlobStore & { readonly size: number } {
  const bodies = new Map<string, string>();
  return {
    get size() {
      return bodies.size;
    },
    async put(body, mediaType): Promise<BlobRef> {
      const ref = blobRefOf(body, mediaType);
      bodies.set(ref.digest, body);
      return ref;
    },
    async get(ref) {
      const body = bodies.get(ref.digest);
      if (body === undefined || !matchesRef(body, ref)) {
        throw new BlobIntegrityError(`payload ${ref.digest} is missing or does not match its digest`);
      }
      return body;
    },
  };
}
