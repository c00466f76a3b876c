/**
 * The event timeline: newest first, each event a disclosure (Enter / Space opens it) showing
 * its data; a kind filter; "Load older" pages back through the log. Event rows carry
 * `id="event-{seq}"` so other sections can link to a seq. Rows are rendered ROWS_STEP at a time
 * (more as the list is scrolled to its end, or with the "Show more" button): a page with
 * thousands of events paints its newest ones first. An opened event offers "View the run at
 * #seq" (time travel); while the page shows the past, the row of that seq is
 * marked current and the later rows are dimmed.
 */
import { memo, useEffect, useId, useRef, useState } from 'react';
import type { RunEvent } from '../../../lib/contracts/index.ts';
import type { Transport } from '../live/live-feed.ts';
import type { FeedState } from '../live/use-run-events.ts';
import {
  EVENT_TERM_HINTS,
  effectText,
  gateLines,
  jsonTermHints,
  timeFieldLines,
} from '../model/event-terms.ts';
import {
  describeEvent,
  EVENT_KIND_GROUPS,
  type EventTone,
  EVENT_KIND_HINTS,
  eventHeadline,
  eventTone,
  isQuietEvent,
  kindFilterHint,
  matchesKindFilter,
  TONE_WORDS,
} from '../model/events.ts';
import { ROWS_STEP } from '../model/paging.ts';
import { clock, Json, stamp } from './common.tsx';

/**
 * A line per term of the raw JSON a newcomer asks about: its times in the page's style, an
 * approval gate's fields, then state_rev, manifest, legacy, ...
 */
function TermHints({ data }: { data: unknown }) {
  const hints = [...timeFieldLines(data, stamp), ...gateLines(data), ...jsonTermHints(data)];
  if (hints.length === 0) return null;
  return (
    <ul className="term-hints muted" data-testid="term-hints">
      {hints.map((h) => (
        <li key={h}>{h}</li>
      ))}
    </ul>
  );
}

/** The kinds that end a run. */
const ENDS: ReadonlySet<string> = new Set(['run_completed', 'run_failed', 'stopped']);

/** Where an event stands against the seq the page shows the past at. */
type Then = 'now' | 'current' | 'before' | 'after';

const thenOf = (seq: number, atSeq: number | null): Then =>
  atSeq === null ? 'now' : seq === atSeq ? 'current' : seq < atSeq ? 'before' : 'after';

const EventRow = memo(function EventRow(props: {
  event: RunEvent;
  then: Then;
  /** The run holds no lease now and this is its latest takeover. */
  freeNow: boolean;
  /** The run had ended before this event. */
  afterEnd: boolean;
  /** For a reducer's answer, the event it answered, when loaded. */
  answered: RunEvent | undefined;
  onTravel: (seq: number) => void;
}) {
  const { event, then } = props;
  const [open, setOpen] = useState(false);
  const desc = describeEvent(event, props.freeNow, props.afterEnd, props.answered);
  return (
    <li
      id={`event-${event.seq}`}
      className={`event tone-${eventTone(event.kind)} then-${then}${isQuietEvent(event) ? ' quiet' : ''}`}
      data-kind={event.kind}
      aria-current={then === 'current' ? 'step' : undefined}
    >
      <details onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
        <summary>
          <span className="seq" title={`Event #${event.seq}: its number in the run's log (its seq)`}>
            #{event.seq}
          </span>{' '}
          <span className="time">{clock(event.at)}</span>{' '}
          <span className="what" title={EVENT_KIND_HINTS[event.kind]}>
            {eventHeadline(event)}
          </span>
          {desc !== '' ? ': ' : ' '}
          <span className="desc">{desc}</span>{' '}
          <span className="kind tag" title={`The event's kind: ${EVENT_KIND_HINTS[event.kind]}`}>
            {event.kind}
          </span>
        </summary>
        {open ? (
          <div className="event-body">
            {event.operation_id !== undefined || event.effect_id !== undefined ? (
              <p className="mono muted" data-testid="event-ids">
                {event.operation_id !== undefined ? (
                  <span title={EVENT_TERM_HINTS.operation}>operation {event.operation_id} </span>
                ) : null}
                {event.effect_id !== undefined ? (
                  <span title={EVENT_TERM_HINTS.effect_id}>
                    effect {event.effect_id}
                    {effectText(event.effect_id) !== undefined ? ` (${effectText(event.effect_id)})` : ''}
                  </span>
                ) : null}
              </p>
            ) : null}
            <Json value={event.data} label={`Data of event ${event.seq}`} />
            <TermHints data={event.data} />
            {then !== 'current' ? (
              <button type="button" className="link-button" onClick={() => props.onTravel(event.seq)}>
                View the run at event #{event.seq}
              </button>
            ) : null}
          </div>
        ) : null}
      </details>
    </li>
  );
});

/** What the coloured bar at each row's left edge means (TONE_WORDS), one swatch per tone. */
function ToneLegend() {
  return (
    <p className="muted tone-legend" data-testid="tone-legend">
      Bar colours:{' '}
      {(Object.entries(TONE_WORDS) as [EventTone, string][]).map(([tone, words]) => (
        <span key={tone} className={`legend-item tone-${tone}`}>
          {words}
        </span>
      ))}
    </p>
  );
}

const TRANSPORT_WORDS: Record<Transport, string> = {
  websocket: 'WebSocket',
  sse: 'server-sent events',
  poll: 'polling',
};

function feedText(state: FeedState): string {
  switch (state.kind) {
    case 'starting':
      return 'connecting…';
    case 'live':
      return `live (${TRANSPORT_WORDS[state.transport]})`;
    case 'settled':
      return 'complete: the run has ended and every event is shown; no more will come';
    case 'retrying':
      return `reconnecting in ${Math.round(state.retryInMs / 1000)} s (${state.message})`;
    case 'ended':
      return `stopped following: ${state.message}`;
  }
}

export function Timeline(props: {
  events: RunEvent[];
  firstSeq: number | null;
  state: FeedState;
  loadOlder: () => Promise<void>;
  loadingOlder: boolean;
  /** The seq the page shows the past at, or null (now). */
  atSeq: number | null;
  /** The run holds no lease now and has not ended (its latest takeover's line says nobody holds it). */
  leaseFree?: boolean;
  onTravel: (seq: number) => void;
}) {
  const ids = useId();
  const lastTakeover =
    props.leaseFree === true
      ? props.events.reduce((seq, e) => (e.kind === 'lease_taken_over' && e.seq > seq ? e.seq : seq), 0)
      : 0;
  // The first end of the run among the loaded events: a reducer's answer after it says the run had ended.
  const endSeq = props.events.reduce(
    (seq, e) => (ENDS.has(e.kind) && (seq === 0 || e.seq < seq) ? e.seq : seq),
    0,
  );
  // The event each reducer answer answered (its data's event_seq), to word an answer with no new steps.
  const bySeq = new Map(props.events.map((e) => [e.seq, e]));
  const [kind, setKind] = useState<string>('');
  const [rows, setRows] = useState(ROWS_STEP);
  const matching = (kind === '' ? props.events : props.events.filter((e) => matchesKindFilter(e, kind)))
    .slice()
    .reverse();
  const shown = matching.slice(0, rows);
  const hidden = matching.length - shown.length;
  const end = useRef<HTMLDivElement>(null);
  const older = props.firstSeq !== null && props.firstSeq > 1;
  // Older events are read only once the first page is in (an empty list's end is always in view).
  const canLoadOlder = older && props.events.length > 0;
  const { loadOlder, loadingOlder } = props;
  // The list's end in view: draw the next rows, or, once all loaded ones are drawn, fetch older ones.
  useEffect(() => {
    const sentinel = end.current;
    if (sentinel === null || (hidden === 0 && (!canLoadOlder || loadingOlder))) return;
    const observer = new IntersectionObserver((entries) => {
      if (!entries.some((e) => e.isIntersecting)) return;
      if (hidden > 0) setRows((n) => n + ROWS_STEP);
      else void loadOlder();
    });
    observer.observe(sentinel);
    return () => observer.disconnect();
  }, [hidden, canLoadOlder, loadingOlder, loadOlder]);
  return (
    <section className="card" aria-labelledby={`${ids}-t`}>
      <div className="section-head">
        <h2 id={`${ids}-t`}>Events</h2>
        <span
          className={`feed feed-${props.state.kind}`}
          role="status"
          aria-live="polite"
          data-testid="feed-state"
        >
          {feedText(props.state)}
        </span>
      </div>
      <div className="field inline">
        <label htmlFor={`${ids}-kind`} className="inline-label">
          Kind
        </label>
        <select id={`${ids}-kind`} value={kind} onChange={(e) => setKind(e.target.value)}>
          <option value="">all kinds</option>
          {EVENT_KIND_GROUPS.map((g) => (
            <optgroup key={g.label} label={g.label}>
              <option value={`group:${g.label}`}>all of {g.label.toLowerCase()}</option>
              {g.kinds.map((k) => (
                <option key={k} value={k} title={EVENT_KIND_HINTS[k]}>
                  {k.replaceAll('_', ' ')}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
        <span className="muted" data-testid="events-loaded">
          {props.events.length} loaded{kind !== '' ? `, ${matching.length} match` : ''}
        </span>
      </div>
      {kindFilterHint(kind) !== undefined ? (
        <p className="muted hint" data-testid="kind-hint">
          {kindFilterHint(kind)}
        </p>
      ) : null}
      <ToneLegend />
      <ol className="timeline" aria-label="Events, newest first" reversed>
        {shown.map((e) => (
          <EventRow
            key={e.seq}
            event={e}
            then={thenOf(e.seq, props.atSeq)}
            freeNow={e.seq === lastTakeover}
            afterEnd={endSeq > 0 && e.seq > endSeq}
            answered={e.kind === 'reducer_answered' ? bySeq.get(Number(e.data.event_seq)) : undefined}
            onTravel={props.onTravel}
          />
        ))}
      </ol>
      <div ref={end} />
      {hidden > 0 ? (
        <button type="button" onClick={() => setRows((n) => n + ROWS_STEP)}>
          Show {Math.min(ROWS_STEP, hidden)} more ({hidden} not shown)
        </button>
      ) : null}
      {older ? (
        <button type="button" onClick={() => void props.loadOlder()} disabled={props.loadingOlder}>
          {props.loadingOlder ? 'Loading…' : `Load older events (before #${props.firstSeq})`}
        </button>
      ) : null}
    </section>
  );
}
