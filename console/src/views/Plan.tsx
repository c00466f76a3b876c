/**
 * The plan: a run's effective projection (its items with their status, and its summary), drawn
 * for the run now (RunPage) and as it stood at a seq (PastView). docs/contracts/reducer.md, "Projection".
 */
import type { Projection } from '../../../lib/contracts/index.ts';
import { noPlanText } from '../model/words.ts';
import { detailText, StatusBadge } from './common.tsx';

/** The projection's summary and items; `empty` when it is null or has no items. */
export function ProjectionList({ projection, empty }: { projection: Projection | null; empty: string }) {
  if (projection === null || projection.items.length === 0) return <p className="muted">{empty}</p>;
  return (
    <>
      {projection.summary !== undefined ? <p>{projection.summary}</p> : null}
      <ol className="plan">
        {projection.items.map((item) => (
          <li key={item.key} data-key={item.key}>
            <StatusBadge status={item.status} /> <span>{item.title}</span>
            {item.detail !== undefined ? <span className="muted"> {detailText(item.detail)}</span> : null}
          </li>
        ))}
      </ol>
    </>
  );
}

/** The run's plan now (its effective projection). */
export function Plan({ projection, hasReducer }: { projection: Projection | null; hasReducer: boolean }) {
  return (
    <section className="card" id="plan" aria-labelledby="plan-title">
      <h2 id="plan-title">Plan</h2>
      <ProjectionList projection={projection} empty={noPlanText(hasReducer)} />
    </section>
  );
}
