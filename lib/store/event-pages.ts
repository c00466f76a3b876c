/**
 * An event page's entries: each event's head with its data as JSON text or a blob reference,
 * and the packing of a commit's events into pages of at most PAGE_LIMIT bytes. The layout is
 * documented in commit-plan.ts. docs/reference/storage.md.
 */

import type { BlobRef } from '../blobs/blob-store.ts';
import type { RunEvent } from '../contracts/index.ts';
import type { Item } from './planned-write.ts';

/**
 * Most serialized bytes (UTF-8 JSON of its events, plus the domain state on the last page) one
 * event page holds; DynamoDB's item limit is 400 KB. A page takes at least one event.
 */
export const PAGE_LIMIT = 300 * 1024;

/** A payload as it is stored: JSON text inline, or a reference to its blob. */
export type StoredBody = { inline: string } | { blob: BlobRef };

/** The stored bodies of a commit's payloads: each event's data (by seq) and its domain state. */
export interface CommitBodies {
  events: Map<number, StoredBody>;
  state?: StoredBody;
}

/** One event's page entry: its head plus its data as JSON text or a blob reference; and its size. */
export function pageEntry(event: RunEvent, body: StoredBody): { entry: Item; bytes: number } {
  const { data: _data, ...head } = event;
  if ('blob' in body) {
    const entry = { ...head, data_blob: body.blob };
    return { entry, bytes: Buffer.byteLength(JSON.stringify(entry)) };
  }
  // The data is already text: measure it as is rather than serializing it a second time.
  const bytes = Buffer.byteLength(JSON.stringify(head)) + Buffer.byteLength(body.inline) + 16;
  return { entry: { ...head, data_json: body.inline }, bytes };
}

/**
 * The entries of a commit's events, packed into pages of at most PAGE_LIMIT serialized bytes
 * (`reserve` bytes of the last page are kept for the domain state): greedily from the last
 * event back, so the last page is the fullest; a page always takes at least one event.
 */
export function packPages(
  events: RunEvent[],
  bodies: CommitBodies,
  reserve: number,
): { entries: Item[]; seqs: number[] }[] {
  const entries = [...events]
    .sort((a, b) => a.seq - b.seq)
    .map((event) => {
      const body = bodies.events.get(event.seq);
      if (body === undefined) throw new Error(`no stored body for event ${event.seq}`);
      return { ...pageEntry(event, body), seq: event.seq };
    });
  const pages: { entries: Item[]; seqs: number[] }[] = [];
  let page: { entries: Item[]; seqs: number[] } = { entries: [], seqs: [] };
  let bytes = reserve;
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    const e = entries[i] as (typeof entries)[number];
    if (page.entries.length > 0 && bytes + e.bytes > PAGE_LIMIT) {
      pages.unshift(page);
      page = { entries: [], seqs: [] };
      bytes = 0;
    }
    page.entries.unshift(e.entry);
    page.seqs.unshift(e.seq);
    bytes += e.bytes;
  }
  if (page.entries.length > 0) pages.unshift(page);
  return pages;
}
