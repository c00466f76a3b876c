/**
 * The order of a listing by status, shared by both RunStore adapters: newest first by the run
 * record's `created_at` (ms), ties by run id descending (code units), across every listing shard.
 * A cursor is the position of the last run of a page, `{created_at, run_id}` as base64url JSON;
 * the next page starts strictly after it, so paging is stable while runs are created (a newer run
 * never shifts a later page). docs/reference/storage.md.
 */
import { isPlainObject } from '../core/canonical.ts';

/** Where a run sorts in a listing. */
export interface ListingPosition {
  created_at: number;
  run_id: string;
}

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Listing order: negative when `a` is listed before `b` (newer, or as new with the greater id). */
export function compareListing(a: ListingPosition, b: ListingPosition): number {
  return b.created_at - a.created_at || byCodeUnits(b.run_id, a.run_id);
}

/** The cursor that continues a listing after `last`. */
export function listingCursor(last: ListingPosition): string {
  return Buffer.from(JSON.stringify({ created_at: last.created_at, run_id: last.run_id })).toString(
    'base64url',
  );
}

/** A cursor this store issued, back to its position. Throws SyntaxError for anything else. */
export function listingPosition(cursor: string): ListingPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString());
  } catch {
    throw new SyntaxError('not a cursor this store issued');
  }
  if (
    !isPlainObject(value) ||
    Object.keys(value).length !== 2 ||
    typeof value.created_at !== 'number' ||
    !Number.isSafeInteger(value.created_at) ||
    typeof value.run_id !== 'string' ||
    value.run_id.length === 0
  ) {
    throw new SyntaxError('not a cursor this store issued');
  }
  return { created_at: value.created_at, run_id: value.run_id };
}
