/**
 * Acting on a run: its open requests (approve / reject quoting the digest shown, answer a
 * question, deliver a parked result), the steer box, and stop / pause / resume (with a budget
 * increase after a budget pause and accept_reducer_change after reducer_changed). Every
 * control keeps its control_id until it is acknowledged (model/controls.ts), so "Send again"
 * after a failure is the same control; every ack is shown in a live region.
 * docs/contracts/run-lifecycle.md, "Controls", "Requests", "Budgets".
 */
import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useCallback, useId, useRef, useState } from 'react';
import type { ControlInput } from '../../../lib/client/shapes.ts';
import {
  BUDGET_LIMITS,
  type BudgetLimit,
  isTerminalStatus,
  type OpenRequest,
  type PublicRunRecord,
} from '../../../lib/contracts/index.ts';
import { useApi } from '../api.tsx';
import { useRunMode } from '../live/use-run-mode.ts';
import { budgetPauseLimit, pausedLine } from '../model/budgets.ts';
import { ControlIds, describeAck } from '../model/controls.ts';
import { MODE_WORDS, steerWords } from '../model/run-mode.ts';
import {
  approvalFold,
  approvalKindText,
  approvalWhy,
  digestHint,
  REASON_HINT,
  TOOL_SUMMARY_HINT,
} from '../model/request-words.ts';
import { APPROVAL_PAUSED, expiryWhat } from '../model/run-words.ts';
import { shortId } from '../model/words.ts';
import { ResultCard } from './ResultCard.tsx';
import { Digest, Expiry, errorText, Json } from './common.tsx';
import { ReducerCheckButton } from './ReducerCheck.tsx';

export interface AckLine {
  id: number;
  tone: 'good' | 'bad';
  text: string;
  /** The control's label (`approve`, `answer`, `deliver`, ...): request acks also show under "Needs you". */
  label?: string;
  controlId?: string;
  retry?: () => void;
}

export interface ControlSender {
  send(label: string, control: ControlInput): Promise<void>;
  busy: string | null;
  acks: AckLine[];
  note(line: Omit<AckLine, 'id'>): void;
}

/** Sends controls to `runId` with stable ids, and keeps the last acks. */
export function useControls(runId: string): ControlSender {
  const { client } = useApi();
  const queryClient = useQueryClient();
  const ids = useRef(new ControlIds());
  const counter = useRef(0);
  const [acks, setAcks] = useState<AckLine[]>([]);
  const [busy, setBusy] = useState<string | null>(null);
  const note = useCallback((line: Omit<AckLine, 'id'>) => {
    counter.current += 1;
    const id = counter.current;
    setAcks((prev) => [{ ...line, id }, ...prev].slice(0, 6));
  }, []);
  const send = useCallback(
    async (label: string, control: ControlInput) => {
      const controlId = ids.current.idFor(control);
      setBusy(label);
      try {
        const ack = await client.applyControl(runId, { ...control, control_id: controlId } as ControlInput);
        ids.current.acknowledged(control);
        note({ ...describeAck(label, ack), controlId, label });
        await queryClient.invalidateQueries({ queryKey: ['run', runId] });
      } catch (error) {
        note({
          label,
          tone: 'bad',
          text: `${label}: no ack (${errorText(error)}). Sending again reuses control ${controlId}, so it applies at most once.`,
          controlId,
          retry: () => void send(label, control),
        });
      } finally {
        setBusy(null);
      }
    },
    [client, runId, note, queryClient],
  );
  return { send, busy, acks, note };
}

export function AckList({ acks, label }: { acks: AckLine[]; label?: string }) {
  return (
    <div className="acks" role="status" aria-live="polite" aria-label={label ?? 'Control acknowledgements'}>
      {acks.map((a) => (
        <p key={a.id} className={`ack ack-${a.tone}`} data-control-id={a.controlId}>
          {a.text}
          {a.retry !== undefined ? (
            <>
              {' '}
              <button type="button" className="small" onClick={a.retry}>
                Send again
              </button>
            </>
          ) : null}
        </p>
      ))}
    </div>
  );
}

// ---------------------------------------------------------------- open requests

/** The labels of the controls that answer a request: on a live run their acks show under "Needs you" only. */
const REQUEST_LABELS = new Set(['approve', 'reject', 'answer', 'deliver']);
const isRequestAck = (a: AckLine) => a.label !== undefined && REQUEST_LABELS.has(a.label);

export function OpenRequests({ run, controls }: { run: PublicRunRecord; controls: ControlSender }) {
  // The answer's ack stays where it was given, also once the request it answered has closed; on
  // an ended run the card goes, and the ack shows under Controls.
  const acks = controls.acks.filter(isRequestAck).slice(0, 2);
  if (isTerminalStatus(run.status)) return null;
  if (run.open_requests.length === 0 && acks.length === 0) return null;
  return (
    <section className="card attention" aria-labelledby="requests-title">
      <h2 id="requests-title">Needs you</h2>
      {run.open_requests.length === 0 ? <p className="muted">Nothing open now.</p> : null}
      {acks.length > 0 ? <AckList acks={acks} label="Acknowledgements of what you sent here" /> : null}
      {run.open_requests.map((request) => (
        <RequestCard
          key={request.request_id}
          request={request}
          runId={run.run_id}
          reducerPath={run.reducer?.function_path}
          controls={controls}
          paused={run.status === 'paused'}
        />
      ))}
    </section>
  );
}

function RequestCard(props: {
  request: OpenRequest;
  runId: string;
  reducerPath: string | undefined;
  controls: ControlSender;
  paused: boolean;
}) {
  const { request, controls } = props;
  switch (request.kind) {
    case 'approval':
      return (
        <ApprovalCard
          request={request}
          controls={controls}
          hasReducer={props.reducerPath !== undefined}
          paused={props.paused}
        />
      );
    case 'input':
      return (
        <QuestionCard
          request={request}
          controls={controls}
          runId={props.runId}
          reducerPath={props.reducerPath}
        />
      );
    case 'result':
      return (
        <ResultCard
          request={request}
          controls={controls}
          paused={props.paused}
          hasReducer={props.reducerPath !== undefined}
        />
      );
  }
}

function ApprovalCard(props: {
  request: Extract<OpenRequest, { kind: 'approval' }>;
  controls: ControlSender;
  hasReducer: boolean;
  paused: boolean;
}) {
  const { request, controls } = props;
  const [reason, setReason] = useState('');
  const ids = useId();
  // The digest shown is the digest sent: approving quotes exactly what this page displays.
  const digest = request.subject.digest;
  const decide = (decision: 'approved' | 'rejected') =>
    controls.send(decision === 'approved' ? 'approve' : 'reject', {
      command: 'approve',
      request_id: request.request_id,
      subject_digest: digest,
      decision,
      ...(reason.trim() !== '' ? { reason: reason.trim() } : {}),
    });
  return (
    <article className="request" aria-labelledby={`${ids}-t`} data-request-id={request.request_id}>
      <h3 id={`${ids}-t`}>
        Approval:{' '}
        <span title={request.subject.kind === 'tool_call' ? TOOL_SUMMARY_HINT : undefined}>
          {request.subject.summary}
        </span>
      </h3>
      <p data-testid="approval-why">
        {approvalWhy(request.subject.kind, props.hasReducer, request.subject.summary)}
      </p>
      <dl className="facts">
        <dt>What</dt>
        <dd title={request.subject.kind}>{approvalKindText(request.subject.kind)}</dd>
        <dt>Digest</dt>
        <dd>
          <Digest full={`${request.subject.digest_alg}:${digest}`} testId="approval-digest" />
          <div className="muted" data-testid="digest-hint">
            {digestHint(request.subject.kind)}
          </div>
        </dd>
        <dt>Request</dt>
        <dd className="mono" title={request.request_id}>
          {shortId(request.request_id)}
        </dd>
      </dl>
      {request.subject.changes !== undefined ? (
        <details open>
          <summary>{approvalFold(request.subject.kind)}</summary>
          <Json value={request.subject.changes} label="What you approve" />
        </details>
      ) : null}
      <Expiry at={request.expires_at} what={expiryWhat('approval', props.hasReducer)} />
      {props.paused ? (
        <p className="muted" data-testid="approval-paused">
          {APPROVAL_PAUSED}
        </p>
      ) : null}
      <label htmlFor={`${ids}-reason`}>Reason (optional)</label>
      <input
        id={`${ids}-reason`}
        aria-describedby={`${ids}-reason-hint`}
        value={reason}
        onChange={(e) => setReason(e.target.value)}
      />
      <span id={`${ids}-reason-hint`} className="muted hint block" data-testid="reason-hint">
        {REASON_HINT}
      </span>
      <div className="buttons">
        <button
          type="button"
          className="primary"
          disabled={controls.busy !== null}
          onClick={() => void decide('approved')}
        >
          Approve
        </button>
        <button
          type="button"
          className="danger"
          disabled={controls.busy !== null}
          onClick={() => void decide('rejected')}
        >
          Reject
        </button>
      </div>
    </article>
  );
}

/** A flat object schema's fields ({type: object, properties: {name: {type, enum?}}}), or null. */
function flatFields(schema: Record<string, unknown> | undefined) {
  if (schema === undefined || schema.type !== 'object') return null;
  const props = schema.properties;
  if (props === null || typeof props !== 'object') return null;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const fields: { name: string; type: string; options?: string[]; required: boolean }[] = [];
  for (const [name, def] of Object.entries(props as Record<string, Record<string, unknown>>)) {
    const type = typeof def.type === 'string' ? def.type : 'string';
    if (!['string', 'number', 'integer', 'boolean'].includes(type)) return null;
    const options = Array.isArray(def.enum) ? def.enum.map(String) : undefined;
    fields.push({ name, type, required: required.includes(name), ...(options ? { options } : {}) });
  }
  return fields;
}

function QuestionCard(props: {
  request: Extract<OpenRequest, { kind: 'input' }>;
  controls: ControlSender;
  runId: string;
  reducerPath: string | undefined;
}) {
  const { request, controls } = props;
  const mode = useRunMode(props.runId, props.reducerPath);
  const ids = useId();
  const [text, setText] = useState('');
  const [choice, setChoice] = useState<string | null>(null);
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const [error, setError] = useState<string | null>(null);
  const fields = request.choices === undefined ? flatFields(request.schema) : null;

  function answerValue(): unknown {
    if (request.choices !== undefined) {
      if (choice === null) throw new Error('choose one answer');
      return choice;
    }
    if (fields !== null) {
      const out: Record<string, unknown> = {};
      for (const f of fields) {
        const raw = values[f.name];
        if (raw === undefined || raw === '') {
          if (f.required) throw new Error(`${f.name} is required`);
          continue;
        }
        if (f.type === 'boolean') out[f.name] = raw === true;
        else if (f.type === 'number' || f.type === 'integer') {
          const n = Number(raw);
          if (!Number.isFinite(n) || (f.type === 'integer' && !Number.isInteger(n))) {
            throw new Error(`${f.name} must be ${f.type === 'integer' ? 'a whole number' : 'a number'}`);
          }
          out[f.name] = n;
        } else out[f.name] = String(raw);
      }
      return out;
    }
    if (request.schema !== undefined) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new Error('the answer must be JSON matching the schema');
      }
    }
    if (text.trim() === '') throw new Error('write an answer');
    return text;
  }

  function submit(event: FormEvent) {
    event.preventDefault();
    let value: unknown;
    try {
      value = answerValue();
    } catch (err) {
      setError((err as Error).message);
      return;
    }
    setError(null);
    void controls.send('answer', { command: 'provide_input', request_id: request.request_id, value });
  }

  return (
    <article className="request" aria-labelledby={`${ids}-q`} data-request-id={request.request_id}>
      <h3 id={`${ids}-q`}>Question</h3>
      <p className="question">{request.question}</p>
      {mode !== null ? (
        <p className="muted mode-note" data-testid="mode-note">
          {MODE_WORDS[mode]}
        </p>
      ) : null}
      <Expiry at={request.expires_at} what={expiryWhat('input', props.reducerPath !== undefined)} />
      <form onSubmit={submit}>
        {request.choices !== undefined ? (
          <fieldset>
            <legend>Your answer</legend>
            {request.choices.map((c, i) => (
              <label key={c} className="choice" htmlFor={`${ids}-c${i}`}>
                <input
                  id={`${ids}-c${i}`}
                  type="radio"
                  name={`${ids}-choice`}
                  value={c}
                  checked={choice === c}
                  onChange={() => setChoice(c)}
                />{' '}
                {c}
              </label>
            ))}
          </fieldset>
        ) : fields !== null ? (
          <fieldset>
            <legend>Your answer</legend>
            {fields.map((f) => (
              <div className="field" key={f.name}>
                <label htmlFor={`${ids}-${f.name}`}>
                  {f.name}
                  {f.required ? ' (required)' : ''}
                </label>
                {f.type === 'boolean' ? (
                  <input
                    id={`${ids}-${f.name}`}
                    type="checkbox"
                    checked={values[f.name] === true}
                    onChange={(e) => setValues({ ...values, [f.name]: e.target.checked })}
                  />
                ) : f.options !== undefined ? (
                  <select
                    id={`${ids}-${f.name}`}
                    value={String(values[f.name] ?? '')}
                    onChange={(e) => setValues({ ...values, [f.name]: e.target.value })}
                  >
                    <option value="">—</option>
                    {f.options.map((o) => (
                      <option key={o} value={o}>
                        {o}
                      </option>
                    ))}
                  </select>
                ) : (
                  <input
                    id={`${ids}-${f.name}`}
                    inputMode={f.type === 'string' ? 'text' : 'decimal'}
                    value={String(values[f.name] ?? '')}
                    onChange={(e) => setValues({ ...values, [f.name]: e.target.value })}
                  />
                )}
              </div>
            ))}
          </fieldset>
        ) : (
          <>
            <label htmlFor={`${ids}-answer`}>
              {request.schema !== undefined ? 'Your answer (JSON matching the schema below)' : 'Your answer'}
            </label>
            <textarea id={`${ids}-answer`} rows={3} value={text} onChange={(e) => setText(e.target.value)} />
            {request.schema !== undefined ? <Json value={request.schema} label="Answer schema" /> : null}
          </>
        )}
        {error !== null ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={controls.busy !== null}>
          Send answer
        </button>
      </form>
    </article>
  );
}

// ---------------------------------------------------------------- steer and lifecycle

export function RunControls({ run, controls }: { run: PublicRunRecord; controls: ControlSender }) {
  const ids = useId();
  const [steer, setSteer] = useState('');
  const [stopReason, setStopReason] = useState('');
  const terminal = isTerminalStatus(run.status);
  const busy = controls.busy !== null;
  const words = steerWords(useRunMode(run.run_id, run.reducer?.function_path), run.reducer === null);

  if (terminal) {
    return (
      <section className="card" aria-labelledby={`${ids}-c`}>
        <h2 id={`${ids}-c`}>Controls</h2>
        <p className="muted">The run has ended: it takes no more controls.</p>
        <AckList acks={controls.acks} />
      </section>
    );
  }
  return (
    <section className="card" aria-labelledby={`${ids}-c`}>
      <h2 id={`${ids}-c`}>Controls</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (steer.trim() === '') return;
          void controls.send('steer', { command: 'steer', input: steer.trim() }).then(() => setSteer(''));
        }}
      >
        <label htmlFor={`${ids}-steer`}>{words.label}</label>
        <textarea
          id={`${ids}-steer`}
          rows={2}
          value={steer}
          aria-describedby={`${ids}-steer-hint`}
          placeholder={words.placeholder}
          onChange={(e) => setSteer(e.target.value)}
        />
        <p id={`${ids}-steer-hint`} className="muted hint" data-testid="steer-hint">
          {words.hint}
        </p>
        <button type="submit" disabled={busy || steer.trim() === ''}>
          {words.button}
        </button>
      </form>
      {run.status === 'paused' ? <ResumeForm run={run} controls={controls} /> : null}
      <div className="buttons">
        {run.status !== 'paused' && run.status !== 'cancelling' ? (
          <button
            type="button"
            disabled={busy}
            onClick={() => void controls.send('pause', { command: 'pause' })}
          >
            Pause
          </button>
        ) : null}
      </div>
      {run.status !== 'cancelling' ? (
        <form
          className="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            void controls.send('stop', {
              command: 'stop',
              ...(stopReason.trim() !== '' ? { reason: stopReason.trim() } : {}),
            });
          }}
        >
          <label htmlFor={`${ids}-stop`}>Stop reason (optional)</label>
          <input id={`${ids}-stop`} value={stopReason} onChange={(e) => setStopReason(e.target.value)} />
          <button type="submit" className="danger" disabled={busy}>
            Stop run
          </button>
        </form>
      ) : (
        <p className="muted">Stopping: {run.stop_reason}</p>
      )}
      {/* An answer's ack shows under "Needs you" while the run is live: once, not here too. */}
      <AckList acks={controls.acks.filter((a) => !isRequestAck(a))} />
    </section>
  );
}

const capitalised = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}`;

function ResumeForm({
  run,
  controls,
}: {
  run: Extract<PublicRunRecord, { status: 'paused' }>;
  controls: ControlSender;
}) {
  const ids = useId();
  const hit = budgetPauseLimit(run);
  const reducerChanged = run.pause_reason === 'reducer_changed';
  const [increase, setIncrease] = useState<Partial<Record<BudgetLimit, string>>>(
    hit !== null ? { [hit]: String(Math.max(1, Math.ceil((run.budgets[hit] ?? 1) / 2))) } : {},
  );
  const [accept, setAccept] = useState(false);
  const [error, setError] = useState<string | null>(null);

  function submit(event: FormEvent) {
    event.preventDefault();
    const budget_increase: Record<string, number> = {};
    for (const [limit, raw] of Object.entries(increase)) {
      if (raw === undefined || raw.trim() === '') continue;
      const n = Number(raw);
      if (!Number.isInteger(n) || n <= 0) {
        setError(`${limit}: a positive whole number`);
        return;
      }
      budget_increase[limit] = n;
    }
    setError(null);
    void controls.send('resume', {
      command: 'resume',
      ...(Object.keys(budget_increase).length > 0 ? { budget_increase } : {}),
      ...(reducerChanged ? { accept_reducer_change: accept } : {}),
    });
  }

  const shown: BudgetLimit[] = hit !== null ? [hit, ...BUDGET_LIMITS.filter((l) => l !== hit)] : [];
  return (
    <form onSubmit={submit} className="resume-form" aria-labelledby={`${ids}-h`}>
      <h3 id={`${ids}-h`}>{capitalised(pausedLine(run))}</h3>
      {hit !== null ? (
        <fieldset>
          <legend>Budget increase (added to the current limits)</legend>
          {shown.slice(0, 3).map((limit) => (
            <div className="field" key={limit}>
              <label htmlFor={`${ids}-${limit}`}>
                {limit} (now {run.budgets[limit] ?? 'unlimited'})
              </label>
              <input
                id={`${ids}-${limit}`}
                inputMode="numeric"
                value={increase[limit] ?? ''}
                onChange={(e) => setIncrease({ ...increase, [limit]: e.target.value })}
              />
            </div>
          ))}
        </fieldset>
      ) : null}
      {reducerChanged ? (
        <label className="choice" htmlFor={`${ids}-accept`}>
          <input
            id={`${ids}-accept`}
            type="checkbox"
            checked={accept}
            onChange={(e) => setAccept(e.target.checked)}
          />{' '}
          Accept the reducer change (the run continues with the new artifact)
        </label>
      ) : null}
      {reducerChanged ? <ReducerCheckButton run={run} /> : null}
      {error !== null ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      <button type="submit" className="primary" disabled={controls.busy !== null}>
        Resume
      </button>
    </form>
  );
}
