/**
 * The "Needs you" card of a parked tool call: the run waits for a result from outside, delivered
 * by quoting the wait's delivery key (its resume_key). Any JSON is passed to the run as the
 * tool's result; a raisin.tool-result/1 envelope is passed as it is. A result can be delivered
 * while the run is paused: it is recorded, and the run reads it once resumed (lib/core's
 * deliverResult keeps the pause). The default body is the CLI's suggestion (lib/client/waiting.ts).
 * docs/contracts/run-lifecycle.md, "Requests".
 */
import { type FormEvent, useId, useState } from 'react';
import type { OpenRequest } from '../../../lib/contracts/index.ts';
import { useApi } from '../api.tsx';
import { RESULT_WORDS } from '../model/request-words.ts';
import { expiryWhat } from '../model/run-words.ts';
import { shortId } from '../model/words.ts';
import type { ControlSender } from './Actions.tsx';
import { errorText, Expiry } from './common.tsx';

/** The body the CLI's `waiting:` hint suggests for a delivery. */
export const DEFAULT_RESULT = '{"ok":true}';

export function ResultCard(props: {
  request: Extract<OpenRequest, { kind: 'result' }>;
  controls: ControlSender;
  paused: boolean;
  hasReducer: boolean;
}) {
  const { request, controls } = props;
  const { client } = useApi();
  const ids = useId();
  const [text, setText] = useState(DEFAULT_RESULT);
  const [busy, setBusy] = useState(false);
  async function submit(event: FormEvent) {
    event.preventDefault();
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown;
    } catch {
      controls.note({ label: 'deliver', tone: 'bad', text: 'deliver: the result must be JSON' });
      return;
    }
    setBusy(true);
    try {
      const out = await client.deliverResult(request.resume_key, value);
      const detail =
        out.ack === 'applied'
          ? `event ${out.seq}`
          : out.ack === 'held'
            ? 'held until the run waits'
            : 'duplicate';
      controls.note({ label: 'deliver', tone: 'good', text: `deliver: ${out.ack} (${detail})` });
    } catch (err) {
      controls.note({ label: 'deliver', tone: 'bad', text: `deliver: ${errorText(err)}` });
    } finally {
      setBusy(false);
    }
  }
  return (
    <article className="request" aria-labelledby={`${ids}-r`} data-request-id={request.request_id}>
      <h3 id={`${ids}-r`}>Waiting for a result from outside: {request.tool}</h3>
      <p className="muted">{RESULT_WORDS.what}</p>
      {props.paused ? (
        <p className="muted" data-testid="result-paused">
          {RESULT_WORDS.paused}
        </p>
      ) : null}
      <dl className="facts">
        <dt title={RESULT_WORDS.keyHint}>Delivery key</dt>
        <dd className="mono wrap" data-testid="delivery-key">
          {request.resume_key}
        </dd>
        <dt title="The runtime's operation of this tool call.">Runtime operation</dt>
        <dd className="mono" title={request.op_id}>
          {shortId(request.op_id)}
        </dd>
      </dl>
      <Expiry at={request.expires_at} what={expiryWhat('result', props.hasReducer)} />
      <form onSubmit={submit}>
        <label htmlFor={`${ids}-value`}>Result (JSON)</label>
        <textarea
          id={`${ids}-value`}
          rows={3}
          value={text}
          aria-describedby={`${ids}-value-hint`}
          onChange={(e) => setText(e.target.value)}
        />
        <p id={`${ids}-value-hint`} className="muted hint" data-testid="result-hint">
          {RESULT_WORDS.bodyHint}
        </p>
        <button type="submit" disabled={busy}>
          Deliver result
        </button>
      </form>
    </article>
  );
}
