/**
 * Controls as the console sends them: one control_id per intended action, kept until that
 * action is acknowledged, so a retry after a lost answer (network error, 5xx) is the same
 * control and the run applies it at most once (its ack is then `duplicate`); and the words an
 * ack is shown with. docs/contracts/run-lifecycle.md, "Controls" (control_id, acks, rejection
 * reasons).
 */

import type { ControlInput } from '../../../lib/client/shapes.ts';
import type { ControlAck } from '../../../lib/contracts/index.ts';

/** The action a control stands for: its body without control_id, keys in a fixed order. */
export function actionKey(control: ControlInput): string {
  const { control_id: _id, ...rest } = control as ControlInput & { control_id?: string };
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sorted(rest));
}

/** control_ids of actions sent and not yet acknowledged, by action. */
export class ControlIds {
  readonly #pending = new Map<string, string>();
  readonly #newId: () => string;
  constructor(newId: () => string = () => globalThis.crypto.randomUUID()) {
    this.#newId = newId;
  }

  /** The id to send `control` with: the one of an unacknowledged earlier attempt, else a new one. */
  idFor(control: ControlInput): string {
    const key = actionKey(control);
    let id = this.#pending.get(key);
    if (id === undefined) {
      id = this.#newId();
      this.#pending.set(key, id);
    }
    return id;
  }

  /** The action got an ack (applied, duplicate or rejected): the next such action is a new control. */
  acknowledged(control: ControlInput): void {
    this.#pending.delete(actionKey(control));
  }
}

const REASONS: Record<string, string> = {
  run_terminal: 'the run has already ended',
  unauthorized: 'you may not control this run',
  digest_mismatch:
    'what you approved is not what the run asks now: the request changed after this page showed it (its digest no longer matches). Review the request again.',
  control_id_reused: 'this control id was already used for another command',
  request_not_found: 'the request is no longer open (answered, withdrawn or expired)',
  request_kind_mismatch: 'that request is not of this kind',
  not_paused: 'the run is not paused',
  reducer_change_not_accepted: 'the reducer artifact changed: resume with "accept the reducer change"',
  reducer_check_failed:
    'the new reducer would decide this run differently (agent-runs reducers check shows where)',
  already_stopping: 'the run is already stopping',
  already_paused: 'the run is already paused',
  max_depth_inherited: 'a child run cannot raise max_depth (its parent sets it)',
  invalid_state: 'the run is not in a state that allows this',
};

/** A control refusal's reason in plain words, its code after in parentheses. */
export function refusalWords(reason: string): string {
  const words = REASONS[reason];
  return words === undefined ? reason.replaceAll('_', ' ') : `${words} (${reason})`;
}

/** What the user is told about an ack: a tone and one sentence. */
export function describeAck(command: string, ack: ControlAck): { tone: 'good' | 'bad'; text: string } {
  switch (ack.ack) {
    case 'applied':
      return { tone: 'good', text: `${command}: applied (event ${ack.seq})` };
    case 'duplicate':
      return { tone: 'good', text: `${command}: already applied (duplicate of event ${ack.original_seq})` };
    case 'rejected':
      return {
        tone: 'bad',
        text: `${command}: rejected, ${ack.reason}: ${REASONS[ack.reason] ?? 'see the event log'} (event ${ack.seq})`,
      };
  }
}
