/**
 * The runs list: its filters (kept in the URL's query so a view can be shared), and paging over
 * the API's listing. `GET /runs` lists one status at a time, newest first, with a cursor per
 * page; "all statuses" asks every status for a page and merges them, keeping one cursor per
 * status that has more. Principal, subject prefix and time are filtered here, over the pages
 * loaded (the API filters by status only).
 */
import { type PublicRunRecord, RUN_STATUSES, type RunStatus } from '../../../lib/contracts/index.ts';

export type StatusFilter = RunStatus | 'all';

export interface RunFilters {
  status: StatusFilter;
  /** Substring of `kind:id` or of the on_behalf_of user. */
  principal: string;
  /** Prefix of `workspace:path`, or of the path alone when it starts with `/`. */
  subject: string;
  /** Created at or after (ms epoch). */
  from?: number;
  /** Created at or before (ms epoch). */
  to?: number;
  order: 'newest' | 'oldest';
}

export const DEFAULT_FILTERS: RunFilters = { status: 'all', principal: '', subject: '', order: 'newest' };

const isStatus = (s: string | null): s is RunStatus =>
  (RUN_STATUSES as readonly (string | null)[]).includes(s);

/** Filters from a query string (`?status=running&principal=...&from=ISO&to=ISO&order=oldest`); unknown values fall back to the defaults. */
export function filtersFromQuery(query: string): RunFilters {
  const q = new URLSearchParams(query);
  const time = (key: string) => {
    const raw = q.get(key);
    const ms = raw === null || raw === '' ? Number.NaN : Date.parse(raw);
    return Number.isFinite(ms) ? ms : undefined;
  };
  const status = q.get('status');
  const from = time('from');
  const to = time('to');
  return {
    status: isStatus(status) ? status : 'all',
    principal: q.get('principal') ?? '',
    subject: q.get('subject') ?? '',
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
    order: q.get('order') === 'oldest' ? 'oldest' : 'newest',
  };
}

/** The query string of `filters` (defaults left out). */
export function filtersToQuery(filters: RunFilters): string {
  const q = new URLSearchParams();
  if (filters.status !== 'all') q.set('status', filters.status);
  if (filters.principal !== '') q.set('principal', filters.principal);
  if (filters.subject !== '') q.set('subject', filters.subject);
  if (filters.from !== undefined) q.set('from', new Date(filters.from).toISOString());
  if (filters.to !== undefined) q.set('to', new Date(filters.to).toISOString());
  if (filters.order !== 'newest') q.set('order', filters.order);
  return q.toString();
}

/** `kind:id` (and `for user` when the principal acts on behalf of one). */
export function principalLabel(p: PublicRunRecord['principal']): string {
  return `${p.kind}:${p.id}${p.on_behalf_of !== undefined ? ` for ${p.on_behalf_of}` : ''}`;
}

export function subjectLabel(s: PublicRunRecord['subject']): string {
  return `${s.workspace}:${s.path}${s.node_id !== undefined ? `#${s.node_id}` : ''}`;
}

/** Whether `run` passes the filters the API does not apply (principal, subject, time). */
export function matchesFilters(run: PublicRunRecord, f: RunFilters): boolean {
  if (f.principal !== '') {
    const needle = f.principal.toLowerCase();
    const hay = [`${run.principal.kind}:${run.principal.id}`, run.principal.on_behalf_of ?? ''];
    if (!hay.some((h) => h.toLowerCase().includes(needle))) return false;
  }
  if (f.subject !== '') {
    const full = `${run.subject.workspace}:${run.subject.path}`;
    if (
      !full.startsWith(f.subject) &&
      !(f.subject.startsWith('/') && run.subject.path.startsWith(f.subject))
    ) {
      return false;
    }
  }
  if (f.from !== undefined && run.created_at < f.from) return false;
  if (f.to !== undefined && run.created_at > f.to) return false;
  return true;
}

/** Sorted by creation (run id breaks ties, so the order is stable). */
export function sortRuns(runs: readonly PublicRunRecord[], order: RunFilters['order']): PublicRunRecord[] {
  const sign = order === 'newest' ? -1 : 1;
  return [...runs].sort(
    (a, b) =>
      sign * (a.created_at - b.created_at) || (a.run_id < b.run_id ? -sign : a.run_id > b.run_id ? sign : 0),
  );
}

/** Where the next page of each status starts: statuses absent here have no more pages. */
export type StatusCursors = Partial<Record<RunStatus, string>>;

export interface ListingPage {
  runs: PublicRunRecord[];
  /** null: the last page of every status was read. */
  next: StatusCursors | null;
}

export type ListRuns = (params: {
  status: RunStatus;
  limit: number;
  cursor?: string;
}) => Promise<{ runs: PublicRunRecord[]; cursor?: string | undefined }>;

/**
 * One page of the listing: for a single status, that status' page; for `all`, a page of every
 * status (the first call, `cursors` null) or of every status that has more (`cursors`).
 */
export async function fetchListingPage(
  listRuns: ListRuns,
  status: StatusFilter,
  cursors: StatusCursors | null,
  limit: number,
): Promise<ListingPage> {
  const statuses: RunStatus[] =
    cursors !== null
      ? (Object.keys(cursors) as RunStatus[])
      : status === 'all'
        ? [...RUN_STATUSES]
        : [status];
  const pages = await Promise.all(
    statuses.map(async (s) => {
      const cursor = cursors?.[s];
      const page = await listRuns({ status: s, limit, ...(cursor !== undefined ? { cursor } : {}) });
      return [s, page] as const;
    }),
  );
  const next: StatusCursors = {};
  for (const [s, page] of pages) if (page.cursor !== undefined) next[s] = page.cursor;
  // A run that changed status between two status pages may be in both: keep its first copy.
  const byId = new Map<string, PublicRunRecord>();
  for (const run of pages.flatMap(([, page]) => page.runs))
    if (!byId.has(run.run_id)) byId.set(run.run_id, run);
  const runs = [...byId.values()];
  return { runs, next: Object.keys(next).length > 0 ? next : null };
}
