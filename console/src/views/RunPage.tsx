/**
 * A run: header (status, subject, principal, agent, reducer and its pinned hash, who drives it
 * in plain words (model/driver.ts): a worker or a client, a takeover estimate when the holder
 * stopped renewing, why an abandoned client-driven run still runs), what needs the user
 * (open requests), controls, the plan (effective projection), usage against budgets, the live
 * event timeline, checkpoints and child runs. The record is read again whenever the feed brings
 * events, and every few seconds (a lease renewal writes no event).
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, type ReactNode, Suspense, useCallback, useId, useRef, useState } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { isTerminalStatus, type PublicRunRecord, type RunEvent } from '../../../lib/contracts/index.ts';
import { DEFAULT_TIMINGS } from '../../../lib/contracts/timings.ts';
import { AGENT_LOOP_PATH } from '../../../lib/reducers/paths.ts';
import { useApi } from '../api.tsx';
import { useRunEvents } from '../live/use-run-events.ts';
import { useRunMode } from '../live/use-run-mode.ts';
import {
  budgetBars,
  budgetPauseLimit,
  formatAmount,
  formatUsd,
  MODEL_TURNS_HINT,
  modelCallsHint,
  pausedLine,
} from '../model/budgets.ts';
import { callOperations } from '../model/call-ops.ts';
import { clientHeardText, driverWords } from '../model/driver.ts';
import { timeFieldLines } from '../model/event-terms.ts';
import { type LeaseObservation, leaseView, observeLease } from '../model/lease.ts';
import { PRINCIPAL_HINT } from '../model/list-words.ts';
import { TIMELINE_WINDOW } from '../model/paging.ts';
import { principalLabel, subjectLabel } from '../model/run-listing.ts';
import {
  checkpointParts,
  noCheckpointsText,
  OPERATION_HINT,
  operationStateText,
  personWaitText,
  USAGE_HINTS,
} from '../model/run-words.ts';
import { travelSearch, travelSeq } from '../model/time-travel.ts';
import {
  ARTIFACT_HASH_HINT,
  plural,
  REDUCER_HINT,
  reasonText,
  reducerGloss,
  SEQ_HINT,
  seqHint,
  shortId,
  TRANSCRIPT_LINK_HINT,
  tokensText,
} from '../model/words.ts';
import { OpenRequests, RunControls, useControls } from './Actions.tsx';
import { Digest, errorText, Json, StatusBadge, stamp, Time, useNow } from './common.tsx';
import { Plan } from './Plan.tsx';
import { Timeline } from './Timeline.tsx';

// Split off: drawn only when the page shows the past (`?at=SEQ`), never on a first paint of now.
const PastView = lazy(() => import('./PastView.tsx'));

/** How often the record is read again without news (ms). */
const RECORD_REFRESH_MS = 5_000;

export function RunPage({ runId }: { runId: string }) {
  const { client } = useApi();
  const queryClient = useQueryClient();
  const controls = useControls(runId);
  const run = useQuery({
    queryKey: ['run', runId],
    queryFn: () => client.getRun(runId),
    refetchInterval: RECORD_REFRESH_MS,
  });
  const onNews = useCallback(
    (events: RunEvent[]) => {
      void queryClient.invalidateQueries({ queryKey: ['run', runId] });
      if (events.some((e) => e.kind === 'checkpoint_written')) {
        void queryClient.invalidateQueries({ queryKey: ['checkpoints', runId] });
      }
      if (events.some((e) => e.kind === 'operation_started' || e.kind === 'tool_result')) {
        void queryClient.invalidateQueries({ queryKey: ['children', runId] });
      }
    },
    [queryClient, runId],
  );
  const feed = useRunEvents(runId, run.data?.last_seq ?? null, TIMELINE_WINDOW, onNews);
  const [atSeq, travel] = useTravel(runId);
  // The side sections are read once the timeline's first page is in: they are not what paints first.
  const ready = feed.events.length > 0 || feed.state.kind !== 'starting';

  if (run.isPending) return <p aria-live="polite">Loading run {runId}…</p>;
  if (run.error !== null) {
    return (
      <section>
        <h1>Run {runId}</h1>
        <p className="error" role="alert">
          {errorText(run.error)}
        </p>
        <Link href="/">Back to the runs</Link>
      </section>
    );
  }
  const record = run.data;
  return (
    <article className="run-page" aria-labelledby="run-title">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/">Runs</Link> / <span className="mono">{record.run_id}</span>
      </nav>
      <RunHeader run={record} stopReason={stopReasonOf(feed.events)} />
      <nav aria-label="Run sections" className="section-nav">
        <a href="#plan">Plan</a> <a href="#usage">Usage</a> <a href="#events">Events</a>{' '}
        <a href="#checkpoints">Checkpoints</a> <a href="#children">Child runs</a>{' '}
        <Link
          href={`/runs/${encodeURIComponent(runId)}/transcript`}
          title={TRANSCRIPT_LINK_HINT}
          data-testid="transcript-link"
        >
          Transcript ↗
        </Link>
        <TravelForm lastSeq={record.last_seq} atSeq={atSeq} onTravel={travel} />
      </nav>
      <div className="run-grid">
        <div className="run-main">
          {atSeq === null ? (
            <>
              <OpenRequests run={record} controls={controls} />
              <Plan
                projection={record.projection}
                hasReducer={record.reducer !== null}
                status={record.status}
                operations={callOperations(feed.events, record)}
                agentLoop={record.reducer?.function_path === AGENT_LOOP_PATH}
              />
            </>
          ) : (
            <Suspense fallback={<p aria-live="polite">Loading the run at event #{atSeq}…</p>}>
              <PastView
                runId={runId}
                seq={atSeq}
                lastSeq={record.last_seq}
                hasReducer={record.reducer !== null}
                agentLoop={record.reducer?.function_path === AGENT_LOOP_PATH}
                operations={callOperations(feed.events, record)}
                onTravel={travel}
              />
            </Suspense>
          )}
          <div id="events">
            <Timeline
              {...feed}
              atSeq={atSeq}
              leaseFree={record.lease === null && !isTerminalStatus(record.status)}
              onTravel={travel}
            />
          </div>
        </div>
        <div className="run-side">
          <RunControls run={record} controls={controls} />
          <Usage run={record} />
          <Checkpoints run={record} enabled={ready} />
          <Children runId={runId} enabled={ready} />
        </div>
      </div>
    </article>
  );
}

/**
 * The seq the page shows the past at (`?at=SEQ`, null for now) and the move to another seq (a
 * new history entry, so the browser's Back returns too); null moves back to now.
 */
function useTravel(runId: string): [number | null, (seq: number | null) => void] {
  const search = useSearch();
  const [, navigate] = useLocation();
  const travel = useCallback(
    (seq: number | null) =>
      navigate(`/runs/${encodeURIComponent(runId)}${travelSearch(window.location.search, seq)}`),
    [navigate, runId],
  );
  return [travelSeq(search), travel];
}

/** "View at seq": a seq of the log to see the run as it stood then. */
function TravelForm(props: { lastSeq: number; atSeq: number | null; onTravel: (seq: number) => void }) {
  const ids = useId();
  const [value, setValue] = useState('');
  return (
    <form
      className="travel-form"
      aria-label="View the run at an event"
      onSubmit={(e) => {
        e.preventDefault();
        const seq = travelSeq(`at=${value.trim()}`);
        if (seq !== null) props.onTravel(seq);
      }}
    >
      <label htmlFor={`${ids}-seq`} className="inline-label">
        View at event #
      </label>
      <input
        id={`${ids}-seq`}
        aria-describedby={`${ids}-seq-hint`}
        title="seq: an event's number in the run's log"
        type="number"
        min={1}
        max={props.lastSeq}
        required
        value={value}
        placeholder={String(props.atSeq ?? props.lastSeq)}
        onChange={(e) => setValue(e.target.value)}
      />
      <button type="submit">View</button>
      <span id={`${ids}-seq-hint`} className="muted hint" data-testid="seq-hint">
        {seqHint(props.lastSeq)}
      </span>
    </form>
  );
}

/** The reason its `stopped` event gives (the record of a stopped run keeps none), when shown. */
function stopReasonOf(events: readonly RunEvent[]): string | undefined {
  const reason = events.findLast((e) => e.kind === 'stopped')?.data.reason;
  return typeof reason === 'string' && reason !== '' ? reason : undefined;
}

function statusDetail(run: PublicRunRecord, stopReason?: string): string | null {
  switch (run.status) {
    case 'paused':
      return `${pausedLine(run)}${budgetPauseLimit(run) !== null ? '; raise it to go on' : ''}`;
    case 'cancelling':
      return `stopping: ${reasonText(run.stop_reason)}`;
    case 'completed':
      return `${run.outcome}${run.summary !== undefined ? `: ${run.summary}` : ''}`;
    case 'failed':
    case 'stopped':
      // A stop's own reason is on its `stopped` event (the timeline has it); `stopped` beside the
      // badge would say nothing.
      if (run.terminal_reason !== run.status) return reasonText(run.terminal_reason);
      if (run.status !== 'stopped' || stopReason === undefined) return null;
      return reasonText(stopReason).startsWith('stopped')
        ? reasonText(stopReason)
        : `stopped: ${reasonText(stopReason)}`;
    default:
      // A queued client-driven run nobody holds waits for its client: the driver's note says so, once.
      return null;
  }
}

/** The operation in flight or pending, as the CLI's `runs get` shows it (`tool_call run_…/op/2 (in flight)`). */
function OperationFact({ run }: { run: PublicRunRecord }) {
  const op = 'operation' in run ? run.operation : null;
  if (op === null || op === undefined) return null;
  const what = op.effect.kind === 'call_tool' ? `tool ${op.effect.tool}` : op.kind.replaceAll('_', ' ');
  return (
    <Fact term="Current operation" hint={OPERATION_HINT} wide testId="operation">
      {what}{' '}
      <span className="mono" title={op.op_id}>
        {shortId(op.op_id)}
      </span>{' '}
      ({operationStateText(op, run.status === 'paused' ? run.pause_reason : undefined)})
    </Fact>
  );
}

function RunHeader({ run, stopReason }: { run: PublicRunRecord; stopReason?: string | undefined }) {
  const { config } = useApi();
  const now = useNow();
  const observed = useRef<LeaseObservation | null>(null);
  observed.current = observeLease(observed.current, run, now);
  // The deployment's timings (config.json's `timings`, from the API's own), else the older fields.
  const timings = {
    heartbeat_ms: config.timings?.heartbeat_ms ?? config.heartbeat_ms ?? DEFAULT_TIMINGS.heartbeat_ms,
    clock_skew_ms: config.timings?.clock_skew_ms ?? DEFAULT_TIMINGS.clock_skew_ms,
    sweep_interval_ms:
      config.timings?.sweep_interval_ms ?? config.sweep_interval_ms ?? DEFAULT_TIMINGS.sweep_interval_ms,
  };
  const lease = leaseView(run, now, observed.current, timings);
  const driver = driverWords(run, lease, timings);
  const heard = clientHeardText(run, now);
  const detail = statusDetail(run, stopReason);
  const personWait = personWaitText(run);
  const agentRef = run.executor_config.agent_ref;
  const agent =
    run.principal.kind === 'agent' ? run.principal.id : typeof agentRef === 'string' ? agentRef : undefined;
  return (
    <header className="card run-header">
      {/* What it waits on a person for sits beside the status, outside the title (the page's name). */}
      <div className="title-line">
        <h1 id="run-title">
          <span className="mono wrap">{subjectLabel(run.subject)}</span> <StatusBadge status={run.status} />
        </h1>
        {personWait !== null ? (
          <a href="#requests-title" className="waits-for" data-testid="waits-for">
            {personWait}
          </a>
        ) : null}
      </div>
      {detail !== null ? (
        <p className="status-detail" data-testid="status-detail">
          {detail}
        </p>
      ) : null}
      {run.objective !== undefined ? <p className="objective">{run.objective}</p> : null}
      <dl className="facts grid">
        <Fact term="Run" wide testId="run-id">
          <span className="mono nowrap" title={run.run_id}>
            {run.run_id}
          </span>
        </Fact>
        <Fact term="Principal" hint={`${PRINCIPAL_HINT}.`}>
          {principalLabel(run.principal)}
        </Fact>
        {agent !== undefined ? (
          <Fact term="Agent" hint={AGENT_HINT}>
            {agent}
          </Fact>
        ) : null}
        <Fact term="Reducer" hint={REDUCER_HINT} wide testId="reducer">
          {run.reducer === null ? (
            'none: the client drives this run'
          ) : (
            <>
              <span className="mono">
                {run.reducer.function_path}
                {run.reducer.handler !== undefined ? `#${run.reducer.handler}` : ''}
              </span>{' '}
              <span className="muted" data-testid="reducer-gloss">
                ({reducerGloss(run.reducer.function_path)})
              </span>
              {run.reducer.artifact_hash !== undefined ? (
                <>
                  {' · '}
                  <span title={ARTIFACT_HASH_HINT} data-testid="artifact-hash-label">
                    artifact hash
                  </span>{' '}
                  <Digest full={run.reducer.artifact_hash} />{' '}
                  <span className="muted">(its code's SHA-256, pinned when the run started)</span>
                </>
              ) : (
                <span className="muted"> (its version is pinned at its first call)</span>
              )}
            </>
          )}
        </Fact>
        <Fact term={driver.term} hint={driver.hint} wide>
          <span className={driver.warn ? 'warn' : undefined} data-testid="lease">
            {driver.text}
          </span>
          {heard !== null ? (
            <span className="block muted" data-testid="client-heard">
              {heard}
            </span>
          ) : null}
        </Fact>
        <OperationFact run={run} />
        {run.parent_run_id !== undefined ? (
          <Fact term="Parent">
            <Link href={`/runs/${encodeURIComponent(run.parent_run_id)}`} className="mono">
              {run.parent_run_id}
            </Link>{' '}
            <span title="How many delegations separate this run from the run a person started.">
              ({plural(run.depth, 'level')} down its delegation tree)
            </span>
          </Fact>
        ) : null}
        <Fact term="Created" testId="created">
          <Time ms={run.created_at} now={now} />
        </Fact>
        <Fact term="Updated">
          <Time ms={run.updated_at} now={now} />
        </Fact>
        <Fact term="Model turns" hint={MODEL_TURNS_HINT} testId="turns">
          {run.turn}
        </Fact>
        <Fact term="Events" hint={SEQ_HINT} testId="events">
          {run.last_seq}
        </Fact>
      </dl>
      {driver.note !== undefined ? (
        <p className="driver-note" data-testid="driver-note">
          {driver.note}
        </p>
      ) : null}
    </header>
  );
}

/** The agent fact's hint; the fact is left out when the run acts as its principal itself. */
const AGENT_HINT =
  'The agent identity this run acts as (its configured agent); when none, the run acts as its principal.';

/** One fact of the header; `hint` is the term's tooltip (what the word means). */
function Fact(props: { term: string; hint?: string; wide?: boolean; testId?: string; children: ReactNode }) {
  return (
    <div className={props.wide === true ? 'fact wide' : 'fact'}>
      <dt title={props.hint}>{props.term}</dt>
      <dd data-testid={props.testId}>{props.children}</dd>
    </div>
  );
}

function Usage({ run }: { run: PublicRunRecord }) {
  const now = useNow();
  const ids = useId();
  const bars = budgetBars(run, now);
  const u = run.usage;
  return (
    <section className="card" id="usage" aria-labelledby={`${ids}-u`}>
      <h2 id={`${ids}-u`}>Usage and budgets</h2>
      <p className="muted" data-testid="usage-line">
        <span title={modelCallsHint(run.reducer !== null)}>{plural(u.model_calls, 'model call')}</span> ·{' '}
        <span title={USAGE_HINTS.toolCalls}>{plural(u.tool_calls, 'tool call')}</span> ·{' '}
        {tokensText(u.input_tokens, u.output_tokens)}
      </p>
      <CostLine cost={u.cost} />
      <p className="muted" data-testid="on-exceeded">
        {run.on_exceeded === 'pause'
          ? 'If a limit below is reached, the run pauses before its next step; raise the limit and resume it to go on.'
          : 'If a limit below is reached, the run ends as failed.'}
      </p>
      <ul className="bars">
        {bars.map((b) => (
          <li key={b.limit} className={b.max === undefined ? 'unbounded' : ''}>
            <label htmlFor={`${ids}-${b.limit}`} title={b.hint}>
              {b.label}{' '}
              <span className="muted">
                {formatAmount(b.used, b.unit)}
                {b.max !== undefined ? ` of ${formatAmount(b.max, b.unit)}` : ' (no limit)'}
              </span>
            </label>
            {b.max !== undefined ? (
              <meter
                id={`${ids}-${b.limit}`}
                min={0}
                max={b.max}
                value={Math.min(b.used, b.max)}
                high={b.max * 0.8}
                optimum={0}
              />
            ) : null}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** What the run cost in US dollars (usage.cost, computed by the API when the run is read). */
function CostLine({ cost }: { cost: PublicRunRecord['usage']['cost'] }) {
  if (cost === undefined) return null;
  return (
    <p data-testid="cost" title={`Prices of ${cost.prices_as_of}, region ${cost.region}`}>
      Cost: <strong>{formatUsd(cost.total_usd)}</strong>{' '}
      <span className="muted">
        {`(model ${formatUsd(cost.model_usd)}${cost.model === null ? ', no price is known for this model' : ''}; ` +
          `AWS ${formatUsd(cost.aws_usd)}, ${USAGE_HINTS.aws}; prices of ${cost.prices_as_of})`}
      </span>
    </p>
  );
}

function Checkpoints({ run, enabled }: { run: PublicRunRecord; enabled: boolean }) {
  const runId = run.run_id;
  const { client } = useApi();
  const conversation = useRunMode(runId, run.reducer?.function_path) === 'conversation';
  const list = useQuery({
    queryKey: ['checkpoints', runId],
    queryFn: () => client.listRunCheckpoints(runId),
    enabled,
  });
  const [open, setOpen] = useState<number | null>(null);
  return (
    <section className="card" id="checkpoints" aria-labelledby="cp-title">
      <h2 id="cp-title">Checkpoints</h2>
      {list.error !== null ? <p className="error">{errorText(list.error)}</p> : null}
      {list.data !== undefined && list.data.length === 0 ? (
        <p className="muted">{noCheckpointsText(run.status)}</p>
      ) : null}
      <ol className="checkpoints">
        {(list.data ?? []).map((cp) => {
          const parts = checkpointParts(cp.core, conversation);
          return (
            <li key={cp.n} data-testid="checkpoint">
              {checkpointText(cp.n, cp.reason)}{' '}
              <span className="muted">
                state revision {cp.state_rev}, {parts.log} up to event{' '}
                <a href={`#event-${cp.transcript_cutoff_seq}`}>#{cp.transcript_cutoff_seq}</a>
                {parts.operation}.
              </span>{' '}
              <button
                type="button"
                className="link-button"
                aria-expanded={open === cp.n}
                onClick={() => setOpen(open === cp.n ? null : cp.n)}
              >
                {open === cp.n ? 'hide raw' : 'raw'}
              </button>
              {open === cp.n ? (
                <>
                  <Json value={cp} label={`Checkpoint ${cp.n}`} />
                  <ul className="term-hints muted" data-testid="checkpoint-times">
                    {timeFieldLines(cp, stamp).map((line) => (
                      <li key={line}>{line}</li>
                    ))}
                  </ul>
                </>
              ) : null}
            </li>
          );
        })}
      </ol>
    </section>
  );
}

/** `Checkpoint 1, written when the run paused:` (the checkpoint's reason read out). */
function checkpointText(n: number, reason: string): string {
  const when =
    reason === 'paused'
      ? 'when the run paused'
      : reason === 'compaction'
        ? 'when the conversation was compacted'
        : `(${reason.replaceAll('_', ' ')})`;
  return `Checkpoint ${n}, written ${when}:`;
}

function Children({ runId, enabled }: { runId: string; enabled: boolean }) {
  return (
    <section className="card" id="children" aria-labelledby="children-title">
      <h2 id="children-title">Child runs</h2>
      {enabled ? <ChildList runId={runId} depth={0} /> : <p className="muted">Loading…</p>}
    </section>
  );
}

function ChildList({ runId, depth }: { runId: string; depth: number }) {
  const { client } = useApi();
  const list = useQuery({ queryKey: ['children', runId], queryFn: () => client.listRunChildren(runId) });
  if (list.error !== null) return <p className="error">{errorText(list.error)}</p>;
  if (list.data === undefined) return <p className="muted">Loading…</p>;
  if (list.data.length === 0) return depth === 0 ? <p className="muted">None.</p> : null;
  return (
    <ul className="tree">
      {list.data.map((child) => (
        <ChildNode key={child.run_id} child={child} depth={depth} />
      ))}
    </ul>
  );
}

function ChildNode({ child, depth }: { child: { run_id: string; status: string }; depth: number }) {
  const [open, setOpen] = useState(false);
  return (
    <li>
      <button
        type="button"
        className="twisty"
        aria-expanded={open}
        aria-label={`${open ? 'Hide' : 'Show'} children of ${child.run_id}`}
        onClick={() => setOpen(!open)}
      >
        {open ? '▾' : '▸'}
      </button>{' '}
      <Link href={`/runs/${encodeURIComponent(child.run_id)}`} className="mono">
        {child.run_id}
      </Link>{' '}
      <StatusBadge status={child.status} />
      {open ? <ChildList runId={child.run_id} depth={depth + 1} /> : null}
    </li>
  );
}
