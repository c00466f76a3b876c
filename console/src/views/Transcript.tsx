/**
 * The transcript: the run as a conversation (model/transcript.ts), live. Model turns show their
 * text and tool calls; each tool result is a card with its envelope: status, writes, reads,
 * evidence, diagnostics, suggested next actions and the payload.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback } from 'react';
import { Link } from 'wouter';
import type { ToolResultEnvelope } from '../../../lib/contracts/index.ts';
import { useApi } from '../api.tsx';
import { useRunEvents } from '../live/use-run-events.ts';
import { subjectLabel } from '../model/run-listing.ts';
import {
  finishText,
  legacyMatters,
  type OutcomeWords,
  type TranscriptEntry,
  transcriptOf,
} from '../model/transcript.ts';
import { Digest, errorText, Json, ModelCallId, StatusBadge } from './common.tsx';
import { shortId, tokensText } from '../model/words.ts';

export function TranscriptPage({ runId }: { runId: string }) {
  const { client } = useApi();
  const queryClient = useQueryClient();
  const run = useQuery({ queryKey: ['run', runId], queryFn: () => client.getRun(runId) });
  const onNews = useCallback(
    () => void queryClient.invalidateQueries({ queryKey: ['run', runId] }),
    [queryClient, runId],
  );
  const feed = useRunEvents(runId, run.data?.last_seq ?? null, 'all', onNews);
  const entries = transcriptOf(feed.events);
  return (
    <article aria-labelledby="transcript-title" className="transcript-page">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/">Runs</Link> / <Link href={`/runs/${encodeURIComponent(runId)}`}>{runId}</Link> /
        transcript
      </nav>
      <h1 id="transcript-title">
        Transcript
        {run.data !== undefined ? (
          <>
            {' '}
            of {subjectLabel(run.data.subject)} <StatusBadge status={run.data.status} />
          </>
        ) : null}
      </h1>
      {run.error !== null ? (
        <p className="error" role="alert">
          {errorText(run.error)}
        </p>
      ) : null}
      <ol className="transcript" aria-label="Conversation">
        {entries.map((entry) => (
          <Entry key={`${entry.kind}-${entry.seq}`} entry={entry} />
        ))}
      </ol>
      {entries.length === 0 && feed.state.kind !== 'starting' ? (
        <p className="muted">Nothing said yet.</p>
      ) : null}
    </article>
  );
}

const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

function Entry({ entry }: { entry: TranscriptEntry }) {
  switch (entry.kind) {
    case 'user':
      return (
        <li className="bubble user">
          <p className="who">
            {entry.via === 'input' ? 'User' : entry.via === 'steer' ? 'User (steer)' : 'User (answer)'}
          </p>
          <p className="said">{asText(entry.content)}</p>
        </li>
      );
    case 'assistant':
      return (
        <li className="bubble assistant">
          <p className="who">
            {entry.outcome !== undefined ? 'Model (run by the client)' : 'Model'}{' '}
            <span className="muted">
              · {tokensText(entry.tokens.input, entry.tokens.output)}
              {entry.outcome === undefined ? (
                <span title={`Why the turn ended (the provider's finish reason: ${entry.finishReason}).`}>
                  {' '}
                  · {finishText(entry.finishReason)}
                </span>
              ) : null}
            </span>
          </p>
          {entry.text !== null && entry.text !== '' ? <p className="said">{entry.text}</p> : null}
          {entry.outcome !== undefined ? <OutcomeLine outcome={entry.outcome} /> : null}
          {entry.toolCalls.map((call) => (
            <div key={call.call_id} className="tool-call">
              <p>
                Calls <strong>{call.name}</strong> <ModelCallId callId={call.call_id} />
              </p>
              <Json value={call.args} label={`Arguments of ${call.name}`} />
            </div>
          ))}
        </li>
      );
    case 'tool':
      return (
        <li className="tool-card">
          <ToolCard tool={entry.tool} callId={entry.callId} opId={entry.opId} envelope={entry.envelope} />
          {entry.outcome !== undefined ? <OutcomeLine outcome={entry.outcome} /> : null}
        </li>
      );
    case 'approval':
      return (
        <li className="notice attention">
          Approval asked: {entry.summary} <Digest full={entry.digest} />
        </li>
      );
    case 'decision':
      return (
        <li className={`notice ${entry.decision === 'approved' ? 'good' : 'bad'}`}>
          Approval {entry.decision}
          {entry.reason !== undefined ? `: ${entry.reason}` : ''}
        </li>
      );
    case 'notice':
      return <li className={`notice ${entry.tone}`}>{entry.text}</li>;
  }
}

/** What a turn reported as a turn outcome says: its text and calls are not in the log, this is. */
function OutcomeLine({ outcome }: { outcome: OutcomeWords }) {
  return (
    <p className="outcome" data-testid="turn-outcome">
      The client's own runtime ran this turn and reported its outcome: {outcome.status}
      {outcome.product !== undefined ? `, ${outcome.product}` : ''}; tokens {outcome.usage}; decided by{' '}
      {outcome.by}.
    </p>
  );
}

function locator(l: {
  workspace?: string | undefined;
  path?: string | undefined;
  node_id?: string | undefined;
}): string {
  return `${l.workspace ?? ''}${l.workspace !== undefined ? ':' : ''}${l.path ?? ''}${l.node_id !== undefined ? `#${l.node_id}` : ''}`;
}

function ToolCard(props: {
  tool: string;
  callId: string | undefined;
  opId: string | undefined;
  envelope: ToolResultEnvelope;
}) {
  const { envelope: env } = props;
  return (
    <section aria-label={`Result of ${props.tool}`} className={`envelope status-${env.status}`}>
      <p className="who">
        Tool <strong>{props.tool}</strong> <StatusBadge status={env.status} />
        {env.error_class !== undefined ? <span className="badge badge-failed">{env.error_class}</span> : null}
        {legacyMatters(env) ? (
          <span
            className="badge"
            title="The tool answered in its own format rather than the runtime's result envelope, so the runtime cannot vouch for the writes and evidence it lists."
          >
            unchecked writes and evidence
          </span>
        ) : null}
        {props.opId !== undefined ? (
          <span
            className="muted"
            data-testid="tool-op"
            title={`The run's operation that ran this tool call: ${props.opId}`}
          >
            {' '}
            operation <span className="mono">{shortId(props.opId)}</span>
          </span>
        ) : null}
        {props.callId !== undefined ? <ModelCallId callId={props.callId} /> : null}
      </p>
      {env.writes.length > 0 ? (
        <>
          <h4>Writes</h4>
          <ul>
            {env.writes.map((w, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: writes have no id; their order is the envelope's
              <li key={i}>
                {w.action} <span className="mono">{locator(w.locator)}</span>
                {w.revision?.value !== undefined ? (
                  <span className="muted"> rev {w.revision.value}</span>
                ) : null}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {env.reads.length > 0 ? (
        <>
          <h4>Reads</h4>
          <ul>
            {env.reads.map((r) => (
              <li key={r.read_id} className="mono">
                {r.read_id} {r.locator !== undefined ? locator(r.locator) : ''}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {env.evidence.length > 0 ? (
        <>
          <h4>Evidence</h4>
          <ul>
            {env.evidence.map((e, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: evidence has no id; its order is the envelope's
              <li key={i}>
                {e.kind} {e.ok === true ? '✓ ok' : e.ok === false ? '✗ not ok' : ''}
                {e.level !== undefined && e.level !== null ? ` (${e.level})` : ''}
                {e.subject?.locator !== undefined ? (
                  <span className="mono"> {locator(e.subject.locator)}</span>
                ) : null}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {env.diagnostics.length > 0 ? (
        <>
          <h4>Diagnostics</h4>
          <ul>
            {env.diagnostics.map((d, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: diagnostics may repeat a code; order is the envelope's
              <li key={i} className={`diag diag-${d.severity}`}>
                <strong>{d.severity}</strong> {d.code}: {d.message}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {env.suggested_next_actions.length > 0 ? (
        <>
          <h4>Suggested next</h4>
          <ul>
            {env.suggested_next_actions.map((a, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: suggestions have no id
              <li key={i}>
                {a.action}
                {a.reason !== undefined ? `: ${a.reason}` : ''}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {env.payload !== undefined ? (
        <details>
          <summary>Payload</summary>
          <Json value={env.payload} label={`Payload of ${props.tool}`} />
        </details>
      ) : null}
    </section>
  );
}
