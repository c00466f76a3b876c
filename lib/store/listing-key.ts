/**
 * The deployment's listing key: 32 random bytes in one item of the table (`KEY#listing` / `K`,
 * attribute `key`, base64), written once by whichever store asks first (a conditional put) and
 * read by every store over the table afterwards. The engine seals the cursors of `GET /runs`
 * with it (lib/engine/list-cursor.ts), so every process of a deployment opens the cursors any
 * other issued, and a cursor never shows a position in the listing. The item carries no index
 * key: no listing or sweep ever finds it. docs/reference/storage.md.
 */
import { randomBytes } from 'node:crypto';

/** Where the key lives. */
export const LISTING_KEY_ITEM = { pk: 'KEY#listing', sk: 'K' } as const;

/** Bytes of the key (AES-256). */
export const LISTING_KEY_BYTES = 32;

/** A fresh key item's attributes (key included). */
export function newListingKeyItem(): { pk: string; sk: string; key: string } {
  return { ...LISTING_KEY_ITEM, key: randomBytes(LISTING_KEY_BYTES).toString('base64') };
}

/** The key a stored item holds, or null when the item is absent or holds no key of the right size. */
export function listingKeyOf(item: Record<string, unknown> | undefined): Uint8Array | null {
  if (typeof item?.key !== 'string') return null;
  const key = Buffer.from(item.key, 'base64');
  return key.length === LISTING_KEY_BYTES ? new Uint8Array(key) : null;
}
