/**
 * The runs list: filters (status through the API; principal, subject prefix and creation time
 * over the loaded pages), sort by creation, paging with the API's cursors ("Load more"), and
 * live status: the unfinished runs shown are followed over the live WebSocket
 * (live/use-live-runs.ts), and the loaded pages are read again as soon as one of them moves;
 * the pages are also read again every few seconds (every 3 s while the socket is not open), which
 * is how new runs appear.
 */
import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useRef } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { RUN_STATUSES } from '../../../lib/contracts/index.ts';
import { useApi } from '../api.tsx';
import { useLiveRuns } from '../live/use-live-runs.ts';
import {
  LIST_HINTS,
  needsYouText,
  outcomeText,
  shownText,
  statusNoteText,
  turnText,
} from '../model/list-words.ts';
import {
  fetchListingPage,
  filtersFromQuery,
  filtersToQuery,
  matchesFilters,
  principalLabel,
  type RunFilters,
  type StatusCursors,
  sortRuns,
  subjectLabel,
} from '../model/run-listing.ts';
import { errorText, StatusBadge, Time, useNow } from './common.tsx';

/** Runs per status per page. */
const PAGE_SIZE = 25;
/** How often the loaded pages are read again without the live socket (ms). */
const REFRESH_MS = 3_000;
/** How often they are read again while the socket is open (new runs, which it does not announce). */
const LIVE_REFRESH_MS = 10_000;

/** `<input type="datetime-local">` value of a ms epoch, in local time. */
function localInput(ms: number | undefined): string {
  if (ms === undefined) return '';
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/** The table's columns: the hint each header carries (list-words.ts) and its label. */
const COLUMNS: readonly [keyof typeof LIST_HINTS, string][] = [
  ['run', 'Run'],
  ['status', 'Status'],
  ['subject', 'Subject'],
  ['principal', 'Principal'],
  ['created', 'Created'],
  ['updated', 'Updated'],
  ['turn', 'Model turns'],
  ['needsYou', 'Needs you'],
];

export function RunsList() {
  const { client } = useApi();
  const queryClient = useQueryClient();
  const liveRef = useRef(false);
  const search = useSearch();
  const [, navigate] = useLocation();
  const filters = filtersFromQuery(search);
  const now = useNow(5_000);
  const ids = useId();
  const setFilters = (next: Partial<RunFilters>) => {
    const merged: RunFilters = { ...filters, ...next };
    for (const k of ['from', 'to'] as const) if (merged[k] === undefined) delete merged[k];
    const q = filtersToQuery(merged);
    navigate(q === '' ? '/' : `/?${q}`, { replace: true });
  };

  const listing = useInfiniteQuery({
    queryKey: ['runs', filters.status],
    queryFn: ({ pageParam }) =>
      fetchListingPage((params) => client.listRuns(params), filters.status, pageParam, PAGE_SIZE),
    initialPageParam: null as StatusCursors | null,
    getNextPageParam: (last) => last.next ?? undefined,
    refetchInterval: () => (liveRef.current ? LIVE_REFRESH_MS : REFRESH_MS),
  });

  const loaded = listing.data?.pages.flatMap((p) => p.runs) ?? [];
  const unique = [...new Map(loaded.map((r) => [r.run_id, r])).values()];
  const runs = sortRuns(
    unique.filter((r) => matchesFilters(r, filters)),
    filters.order,
  );
  const live = useLiveRuns(unique, () => void queryClient.invalidateQueries({ queryKey: ['runs'] }));
  liveRef.current = live;

  return (
    <section aria-labelledby="runs-title">
      <h1 id="runs-title">Runs</h1>
      <form className="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <div className="field">
          <label htmlFor={`${ids}-status`}>Status</label>
          <select
            id={`${ids}-status`}
            value={filters.status}
            onChange={(e) => setFilters({ status: e.target.value as RunFilters['status'] })}
          >
            <option value="all">all</option>
            {RUN_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${ids}-principal`}>Principal</label>
          <input
            id={`${ids}-principal`}
            type="search"
            aria-describedby={`${ids}-principal-hint`}
            placeholder="user:alice"
            value={filters.principal}
            onChange={(e) => setFilters({ principal: e.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor={`${ids}-subject`}>Subject prefix</label>
          <input
            id={`${ids}-subject`}
            type="search"
            aria-describedby={`${ids}-subject-hint`}
            placeholder="workspace:/path"
            value={filters.subject}
            onChange={(e) => setFilters({ subject: e.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor={`${ids}-from`}>Created from</label>
          <input
            id={`${ids}-from`}
            type="datetime-local"
            value={localInput(filters.from)}
            onChange={(e) => {
              const ms = Date.parse(e.target.value);
              setFilters({ from: Number.isFinite(ms) ? ms : undefined });
            }}
          />
        </div>
        <div className="field">
          <label htmlFor={`${ids}-to`}>Created to</label>
          <input
            id={`${ids}-to`}
            type="datetime-local"
            value={localInput(filters.to)}
            onChange={(e) => {
              const ms = Date.parse(e.target.value);
              setFilters({ to: Number.isFinite(ms) ? ms : undefined });
            }}
          />
        </div>
        <div className="field">
          <label htmlFor={`${ids}-order`}>Sort</label>
          <select
            id={`${ids}-order`}
            value={filters.order}
            onChange={(e) => setFilters({ order: e.target.value === 'oldest' ? 'oldest' : 'newest' })}
          >
            <option value="newest">newest first</option>
            <option value="oldest">oldest first</option>
          </select>
        </div>
      </form>
      <p className="hint filter-hints">
        <span id={`${ids}-principal-hint`}>Principal: {LIST_HINTS.principal}</span>{' '}
        <span id={`${ids}-subject-hint`}>Subject prefix: {LIST_HINTS.subject}</span>
      </p>

      <p className="muted" aria-live="polite" data-testid="list-count">
        {listing.isPending
          ? 'Loading runs…'
          : `${shownText(runs.length, unique.length, listing.hasNextPage)}${listing.isFetching ? ' · refreshing' : ''}`}{' '}
        <span className={live ? 'feed feed-live' : 'feed'} data-testid="list-feed">
          {live ? 'updates live' : `refreshed every ${REFRESH_MS / 1000} s`}
        </span>
      </p>
      {listing.error !== null ? (
        <p className="error" role="alert">
          Could not list runs: {errorText(listing.error)}
        </p>
      ) : null}

      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard */}
      <section className="table-box" tabIndex={0} aria-label="Runs table">
        <table className="runs-table">
          <caption className="visually-hidden">Runs, {filters.order} first</caption>
          <thead>
            <tr>
              {COLUMNS.map(([hint, label]) => (
                <th key={hint} scope="col" title={LIST_HINTS[hint]}>
                  {label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => {
              return (
                <tr key={run.run_id} data-run-id={run.run_id}>
                  <td data-label="Run">
                    <Link href={`/runs/${encodeURIComponent(run.run_id)}`} className="mono">
                      {run.run_id}
                    </Link>
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={run.status} />
                    {outcomeText(run) !== '' ? (
                      <span className="status-note" data-testid="status-outcome">
                        {' · '}
                        {outcomeText(run)}
                      </span>
                    ) : null}
                    {statusNoteText(run) !== '' ? (
                      <span className="muted status-note" data-testid="status-note">
                        {' '}
                        {statusNoteText(run)}
                      </span>
                    ) : null}
                  </td>
                  <td data-label="Subject" className="mono subject-cell">
                    <SlashBreaks text={subjectLabel(run.subject)} />
                  </td>
                  <td data-label="Principal">{principalLabel(run.principal)}</td>
                  <td data-label="Created">
                    <Time ms={run.created_at} now={now} compact />
                  </td>
                  <td data-label="Updated">
                    <Time ms={run.updated_at} now={now} compact />
                  </td>
                  <td data-label="Model turns" title={run.turn === 0 ? LIST_HINTS.turn : undefined}>
                    {turnText(run.turn)}
                  </td>
                  <td data-label="Needs you">{needsYouText(run.open_requests)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
      {!listing.isPending && runs.length === 0 ? <p>No run matches these filters.</p> : null}
      {listing.hasNextPage ? (
        <button
          type="button"
          onClick={() => void listing.fetchNextPage()}
          disabled={listing.isFetchingNextPage}
        >
          {listing.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      ) : null}
    </section>
  );
}

/** A subject with a line-break chance after each `/` and `:`, so it wraps there, not mid-word. */
function SlashBreaks({ text }: { text: string }) {
  const parts = text.split(/(?<=[/:])/);
  return (
    <>
      {parts.map((part, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one fixed string, in order
        <span key={i}>
          {part}
          {i < parts.length - 1 ? <wbr /> : null}
        </span>
      ))}
    </>
  );
}
