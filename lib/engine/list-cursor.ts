/**
 * Listing runs by status without reading, or showing anything of, runs the caller may not see
 * (docs/guides/who-may-do-what.md). A caller that is not an admin nor a system caller lists
 * through the store's index of its own principal (RunStore.listByPrincipal): it reads its own
 * runs only, keeps those of the status asked for, and goes on until the page is full, its runs
 * end, or MAX_STORE_PAGES store pages were read; so what a listing costs and answers depends on
 * the caller's own runs alone. Admins and system callers list every tenant's runs of the status
 * (RunStore.listByStatus) and keep those they may list (core/authority.ts mayList). The cursor
 * it answers is sealed: AES-256-GCM under the deployment's listing key (RunStore.listingKey),
 * the index read, the caller's principal key and the status as associated data, the store's
 * position padded to a fixed size inside. So a cursor shows no run id, no time and no count, and
 * only the caller it was issued to may continue it, in the status it was issued for.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { RunRecord } from '../contracts/index.ts';
import { type Caller, mayList } from '../core/authority.ts';
import { principalKeyOf } from '../core/principal.ts';
import { EngineError } from './errors.ts';
import type { RunStore } from './ports.ts';

/** Store pages one listing request reads at most before it answers (with a cursor when more follow). */
export const MAX_STORE_PAGES = 8;

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** The store's position is padded to a multiple of this many bytes, so its length tells nothing. */
const PAD_TO = 256;

/**
 * The index a caller's listing by status reads: its own principal's, unless it is an admin or a
 * system caller (every tenant's runs of the status).
 */
const indexOf = (caller: Caller): 'principal' | 'status' =>
  caller.admin === true || caller.principal.kind === 'system' ? 'status' : 'principal';

/** What a sealed cursor is bound to: the index read, the caller (its principal key) and the status listed. */
const boundTo = (caller: Caller, status: string) =>
  Buffer.from(
    `agent-runs/list-cursor/v2\u0000${indexOf(caller)}\u0000${principalKeyOf(caller.principal)}\u0000${status}`,
  );

/** Seals the store's cursor `position` for `caller` listing `status`: base64url, opaque. */
export function sealCursor(key: Uint8Array, caller: Caller, status: string, position: string): string {
  const text = Buffer.from(JSON.stringify({ p: position }));
  const padded = Buffer.alloc(Math.ceil((text.length + 1) / PAD_TO) * PAD_TO, 0x20);
  text.copy(padded);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(boundTo(caller, status));
  const sealed = Buffer.concat([cipher.update(padded), cipher.final()]);
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
}

/**
 * The store position a cursor sealed for `caller` and `status` holds, or null: not a cursor
 * this deployment sealed, sealed for another caller or status, or altered.
 */
export function openCursor(key: Uint8Array, caller: Caller, status: string, cursor: string): string | null {
  const bytes = Buffer.from(cursor, 'base64url');
  if (bytes.length < IV_BYTES + TAG_BYTES + PAD_TO || bytes.toString('base64url') !== cursor) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(boundTo(caller, status));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    const text = Buffer.concat([
      decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]).toString();
    const value = JSON.parse(text) as { p?: unknown };
    return typeof value.p === 'string' ? value.p : null;
  } catch {
    return null;
  }
}

/** The refusal of a cursor this API did not issue to this caller for this status. */
export function invalidCursor(): EngineError {
  return new EngineError('validation_failed', 'invalid query cursor: not a cursor this API returned', {
    target: 'query',
    issues: [{ path: ['cursor'], code: 'invalid_cursor', message: 'not a cursor this API returned' }],
  });
}

/** One listing request by status. `status` undefined lists `running` without re-checking each run's status. */
export interface StatusListing {
  status?: RunRecord['status'];
  limit: number;
  cursor?: string;
}

/**
 * Up to `query.limit` records of runs `caller` may list, newest first, and the sealed cursor
 * that continues after them (absent at the listing's end). Fewer (none, even) with a cursor
 * when MAX_STORE_PAGES store pages held too few such runs: for a caller listing through its own
 * principal's index, only its own runs of other statuses are passed over. Throws EngineError
 * validation_failed (`cursor`, `invalid_cursor`) for a cursor not sealed for this caller and status.
 */
export async function listVisibleByStatus(
  store: RunStore,
  key: () => Promise<Uint8Array>,
  query: StatusListing,
  caller: Caller,
): Promise<{ runs: RunRecord[]; cursor?: string }> {
  const status = query.status ?? 'running';
  let position: string | undefined;
  if (query.cursor !== undefined) {
    const opened = openCursor(await key(), caller, status, query.cursor);
    if (opened === null) throw invalidCursor();
    position = opened;
  }
  const own = indexOf(caller) === 'principal';
  const principalKey = principalKeyOf(caller.principal);
  const read = (limit: number, at: string | undefined) =>
    own ? store.listByPrincipal(principalKey, limit, at) : store.listByStatus(status, limit, at);
  const runs: RunRecord[] = [];
  for (let pages = 0; pages < MAX_STORE_PAGES; pages += 1) {
    let page: { run_ids: string[]; cursor?: string };
    try {
      page = await read(query.limit - runs.length, position);
    } catch (err) {
      // The stores throw SyntaxError for a position they did not issue (listing-order.ts).
      if (err instanceof SyntaxError) throw invalidCursor();
      throw err;
    }
    const records = await Promise.all(page.run_ids.map((id) => store.getRun(id)));
    for (const r of records) {
      if (r === null || !mayList(r, caller)) continue;
      // The principal's index holds every status; the status index may lag a status change.
      if ((own || query.status !== undefined) && r.status !== status) continue;
      runs.push(r);
    }
    position = page.cursor;
    if (position === undefined || runs.length >= query.limit) break;
  }
  if (position === undefined) return { runs };
  return { runs, cursor: sealCursor(await key(), caller, status, position) };
}
