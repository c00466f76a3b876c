/**
 * The plan: a run's effective projection (its items with their status, and its summary, under a
 * line saying the plan stopped when the run is stopped, failed or paused), drawn for the run now
 * (RunPage) and as it stood at a seq (PastView). docs/contracts/reducer.md, "Projection".
 */
import type { Projection } from '../../../lib/contracts/index.ts';
import { noPlanText, planItemDetail, planItemNote, planStatusText, planSummaryText } from '../model/words.ts';
import { ModelCallId, StatusBadge } from './common.tsx';

/**
 * The projection's summary and items; `empty` when it is null or has no items. `operations`: the
 * run's own operation for each of the model's call ids (model/call-ops.ts), shown as a tool
 * call item's id, the model's id folded beside it. `agentLoop`: the run's reducer is the
 * built-in agent loop, whose own last item (`respond`) says so (planItemNote).
 */
export function ProjectionList(props: {
  projection: Projection | null;
  empty: string;
  status?: string;
  operations?: ReadonlyMap<string, string>;
  agentLoop?: boolean;
}) {
  const { projection, empty, operations } = props;
  if (projection === null || projection.items.length === 0) return <p className="muted">{empty}</p>;
  const stopped = props.status !== undefined ? planStatusText(props.status) : null;
  return (
    <>
      {stopped !== null ? (
        <p className="warn" data-testid="plan-stopped">
          {stopped}
        </p>
      ) : null}
      {projection.summary !== undefined ? (
        <p className={stopped !== null ? 'muted' : undefined} data-testid="plan-summary">
          {stopped !== null
            ? `Where it stood: ${planSummaryText(projection.summary)}`
            : planSummaryText(projection.summary)}
        </p>
      ) : null}
      <ol className="plan">
        {projection.items.map((item) => {
          const detail = planItemDetail(item.title, item.detail, (id) => operations?.get(id));
          const note = planItemNote(item.key, props.agentLoop === true);
          return (
            <li key={item.key} data-key={item.key}>
              <StatusBadge status={item.status} /> <span>{item.title}</span>
              {detail.text !== '' ? (
                <span className="muted" data-testid="plan-detail">
                  {' · '}
                  {detail.text}
                </span>
              ) : null}
              {note !== '' ? (
                <span className="muted" data-testid="plan-note">
                  {' · '}
                  {note}
                </span>
              ) : null}
              {detail.modelCallId !== undefined ? (
                <ModelCallId callId={detail.modelCallId} testId="plan-call-id" />
              ) : null}
            </li>
          );
        })}
      </ol>
    </>
  );
}

/** The run's plan now (its effective projection), headed by what the run's status means for it. */
export function Plan(props: {
  projection: Projection | null;
  hasReducer: boolean;
  status: string;
  operations?: ReadonlyMap<string, string>;
  agentLoop?: boolean;
}) {
  return (
    <section className="card" id="plan" aria-labelledby="plan-title">
      <h2 id="plan-title">Plan</h2>
      <ProjectionList
        projection={props.projection}
        empty={noPlanText(props.hasReducer)}
        status={props.status}
        agentLoop={props.agentLoop === true}
        {...(props.operations !== undefined ? { operations: props.operations } : {})}
      />
    </section>
  );
}
