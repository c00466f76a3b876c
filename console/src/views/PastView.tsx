/**
 * Time travel on the run page: the run as it stood at one seq, read from
 * `GET /runs/{id}/at/{seq}` (the log, the checkpoints and the stored states; no new run): its
 * status and turn then, the open requests, the plan (effective projection) and the domain state,
 * under a banner that says this is the past, with steps to the seq before and after and a way
 * back to now. Nothing here acts on the run. Loaded lazily: a run page drawn now never fetches it.
 */
import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { useApi } from '../api.tsx';
import {
  PAST_STATE_HINT,
  PAST_STATUS_HINT,
  type PastView as Past,
  pastView,
  requestLine,
} from '../model/time-travel.ts';
import { noPlanText, plural, shortId } from '../model/words.ts';
import { errorText, Json, StatusBadge } from './common.tsx';
import { ProjectionList } from './Plan.tsx';

/**
 * The run `runId` at `seq`; `lastSeq`: its last seq now (the record's, so the steps follow a run
 * that moves on). `onTravel(seq)` moves to another seq, `onTravel(null)` back to now.
 */
export default function PastView(props: {
  runId: string;
  seq: number;
  lastSeq: number;
  /** The run has a reducer (server-driven): what an empty plan then means. */
  hasReducer: boolean;
  /** The run's reducer is the built-in agent loop (its own last plan item says so). */
  agentLoop?: boolean;
  /** The run's own operation for each of the model's call ids (model/call-ops.ts). */
  operations?: ReadonlyMap<string, string>;
  onTravel: (seq: number | null) => void;
}) {
  const { client } = useApi();
  const { runId, seq, lastSeq, onTravel } = props;
  // A seq's past does not change: read once (its current_seq goes stale; lastSeq does not).
  const at = useQuery({
    queryKey: ['run-at', runId, seq],
    queryFn: async () => pastView(await client.getRunAtSeq(runId, seq)),
    staleTime: Number.POSITIVE_INFINITY,
  });
  const ids = useId();
  const past = at.data;
  return (
    <section className="card past" aria-labelledby={`${ids}-t`} data-testid="past-view">
      <div className="past-banner">
        <h2 id={`${ids}-t`}>The past: the run at event #{seq}</h2>
        <p role="status" aria-live="polite">
          {past !== undefined
            ? `As it stood after event #${seq} of ${Math.max(lastSeq, past.currentSeq)}, from its log. Nothing here acts on the run; its controls act on it now.`
            : at.error !== null
              ? 'This event could not be read.'
              : `Reading the run at event #${seq}…`}
        </p>
        <div className="buttons">
          <button type="button" disabled={seq <= 1} onClick={() => onTravel(seq - 1)}>
            ◂ #{seq - 1}
          </button>
          <button type="button" disabled={seq >= lastSeq} onClick={() => onTravel(seq + 1)}>
            #{seq + 1} ▸
          </button>
          <button type="button" className="primary" onClick={() => onTravel(null)}>
            Back to now
          </button>
        </div>
      </div>
      {at.error !== null ? (
        <p className="error" role="alert">
          {errorText(at.error)}
        </p>
      ) : null}
      {past !== undefined ? (
        <PastBody
          past={past}
          hasReducer={props.hasReducer}
          agentLoop={props.agentLoop === true}
          operations={props.operations}
        />
      ) : null}
    </section>
  );
}

function PastBody({
  past,
  hasReducer,
  agentLoop,
  operations,
}: {
  past: Past;
  hasReducer: boolean;
  agentLoop: boolean;
  operations: ReadonlyMap<string, string> | undefined;
}) {
  return (
    <>
      <dl className="facts grid">
        <div className="fact">
          <dt title={PAST_STATUS_HINT}>Status then</dt>
          <dd>
            <StatusBadge status={past.status} />
            <div className="muted hint" data-testid="past-status-hint">
              {PAST_STATUS_HINT}
            </div>
          </dd>
        </div>
        <div className="fact">
          <dt>Model turns then</dt>
          <dd>{past.turn}</dd>
        </div>
        <div className="fact">
          <dt>State revision</dt>
          <dd data-testid="past-state-rev">{past.stateRev}</dd>
        </div>
        <div className="fact">
          <dt>Usage then</dt>
          <dd>
            {plural(past.modelCalls, 'model call')} · {plural(past.toolCalls, 'tool call')}
          </dd>
        </div>
        <div className="fact wide">
          <dt>Last checkpoint</dt>
          <dd>
            {past.checkpoint === null
              ? 'none yet'
              : `#${past.checkpoint.n} ${past.checkpoint.reason} (state rev ${past.checkpoint.state_rev})`}
          </dd>
        </div>
      </dl>
      {past.unknownReason !== undefined ? (
        <p className="warn" data-testid="past-unknown">
          Not all of it can be shown: {past.unknownReason}.
        </p>
      ) : null}
      <h3>Open requests then</h3>
      {past.openRequests.length === 0 && past.unreadRequests.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <ul className="past-requests" data-testid="past-requests">
          {past.openRequests.map((r) => (
            <li key={r.request_id} data-request-id={r.request_id}>
              {requestLine(r)}{' '}
              <span className="mono muted" title={r.request_id}>
                {shortId(r.request_id)}
              </span>
            </li>
          ))}
          {past.unreadRequests.map((r, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: unread requests have no id to key by
            <li key={i}>
              <Json value={r} label="An open request the console cannot read" />
            </li>
          ))}
        </ul>
      )}
      {past.unansweredCalls.length > 0 ? (
        <p className="muted">
          Tool calls without a result then (the model's ids for these calls):{' '}
          <span title={past.unansweredCalls.join(', ')}>{past.unansweredCalls.map(shortId).join(', ')}</span>
        </p>
      ) : null}
      <h3>Plan then</h3>
      {past.projection === undefined ? (
        <p className="muted">Unknown.</p>
      ) : (
        <ProjectionList
          projection={past.projection}
          empty={noPlanText(hasReducer)}
          agentLoop={agentLoop}
          {...(operations !== undefined ? { operations } : {})}
        />
      )}
      <h3>State then (revision {past.stateRev})</h3>
      <p className="muted hint" data-testid="past-state-hint">
        {PAST_STATE_HINT}
      </p>
      {past.state.known ? (
        <Json value={past.state.value} label={`Domain state at revision ${past.stateRev}`} />
      ) : (
        <p className="muted">The store no longer holds this revision.</p>
      )}
    </>
  );
}
