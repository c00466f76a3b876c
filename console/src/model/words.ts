/** Small wording helpers the views share: short digests, counted nouns, an empty plan, times. Pure. */
import { CONTROL_REASON_WORDS } from '../../../lib/client/reason-words.ts';
import { AGENT_LOOP_PATH } from '../../../lib/reducers/paths.ts';

/** A digest without its algorithm prefix (`sha256:rfc8785:ab12…` → `ab12…`), cut to `n` characters. */
export function shortDigest(value: string, n = 12): string {
  const bare = value.slice(value.lastIndexOf(':') + 1);
  return bare.length > n ? `${bare.slice(0, n)}…` : bare;
}

/** `1 model call`, `3 model calls`, `1,200 tokens`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/**
 * What the plan says when there is none: a server-driven run's reducer has not written one yet; a
 * client-driven run (no reducer) has none, since only a reducer writes a plan.
 */
export function noPlanText(hasReducer: boolean): string {
  return hasReducer
    ? 'No plan yet: the reducer (the code that decides this run) writes one as it works.'
    : "No plan: this run is moved by its client's own code, and only a server-side reducer writes a plan.";
}

/**
 * What a reducer is, where the run page first names it (the header's Reducer fact) and in the
 * timeline's reducer rows. docs/concepts.md.
 */
export const REDUCER_HINT = 'The reducer: the code that decides each next step of the run.';

/**
 * The words beside the reducer's path in the header: what a reducer does, and, only for the
 * built-in agent loop (AGENT_LOOP_PATH), that it is that loop; a Starlark or other published
 * reducer is its author's own code.
 */
export function reducerGloss(functionPath: string): string {
  const what = 'the code that decides each next step of the run';
  return functionPath === AGENT_LOOP_PATH ? `${what}: the built-in agent loop` : what;
}

/**
 * The title of the header's environment badge (config.json's `environment`): `local` is the
 * local stack (`npm start`, lib/local/stack-parts.ts), another name the deployment's own.
 */
export function environmentHint(environment: string): string {
  return environment === 'local'
    ? 'local: this console talks to the local stack started with npm start on this machine, not to a deployment on AWS.'
    : `${environment}: the name of the deployment this console talks to (its environment).`;
}

/** `21 in / 23 out tokens`: a model turn's or a run's tokens, the way the usage line writes them. */
export function tokensText(input: number, output: number): string {
  return `${input.toLocaleString('en-US')} in / ${plural(output, 'out token')}`;
}

/**
 * What the reducer's artifact hash is, beside it in the header (ReducerBinding.artifact_hash;
 * docs/guides/upgrading-a-reducer.md): the sha256 of the code published at the reducer's path,
 * pinned when the run started.
 */
export const ARTIFACT_HASH_HINT =
  "The artifact hash: the SHA-256 of the reducer's code as published at its path, pinned when the " +
  'run started. The run keeps running this code even if newer code is published at the path.';

/**
 * The note on the agent loop's last plan item (lib/reducers/agent-loop/projection.ts, key
 * `respond`: "Finish the task" or "Reply to the user"): the loop adds it to every plan itself.
 */
export const RESPOND_ITEM_NOTE =
  "the agent loop's own last step, on every run's plan: the model's final answer (not an item of your input)";

/**
 * The note of a plan item, '' for most: the agent loop's `respond` item says the loop added it
 * (RESPOND_ITEM_NOTE); another reducer's items are its own.
 */
export function planItemNote(key: string, agentLoop: boolean): string {
  return agentLoop && key === 'respond' ? RESPOND_ITEM_NOTE : '';
}

/** The title of the run page's Transcript link, the one section link that opens another page. */
export const TRANSCRIPT_LINK_HINT =
  "Opens the run's transcript on its own page: the conversation, message by message (Back returns here).";

/** A pause or stop reason for people: a control's default read out (the CLI's words too), else `_` read as spaces. */
export function reasonText(reason: string): string {
  return CONTROL_REASON_WORDS[reason] ?? reason.replaceAll('_', ' ');
}

/**
 * A run or operation id shown short: a run id's long tail cut (`run_3f2a9c0d…/op/2` → `run_3f2a9c…/op/2`),
 * so ids like `scripted-run_…/op/1` stay on one line; the full id goes in a title. Other text unchanged.
 */
export function shortId(id: string): string {
  return id.replace(/run_([A-Za-z0-9]{6})[A-Za-z0-9]{4,}/g, 'run_$1…');
}

/**
 * The line above a plan whose run no longer moves: a stopped, failed or paused run's plan stopped
 * where it stands (its items still pending will not run, or wait for a resume); null otherwise.
 */
export function planStatusText(status: string): string | null {
  switch (status) {
    case 'stopped':
      return 'The run was stopped, so the plan stopped here: items still pending will not run.';
    case 'failed':
      return 'The run failed, so the plan stopped here: items still pending will not run.';
    case 'cancelling':
      return 'The run is stopping, so the plan stops here: items still pending will not run.';
    case 'paused':
      return 'The run is paused, so the plan stopped here: it goes on when the run is resumed.';
    default:
      return null;
  }
}

/**
 * The label of the model's own id for a tool call. A tool call's one primary id is its operation
 * (`run_…/op/N`, the run's own id); the model's id is shown second, under this label.
 */
export const MODEL_CALL_ID_LABEL = "the model's id for this call";

const MODEL_CALL_ID_BASE =
  "The model names each tool call it asks for; the runtime matches the tool's result to the call " +
  "by that name. It is not the run's own id for the call: that is the operation (run_…/op/N).";
const SCRIPTED_NOTE =
  "The scripted model names its calls after the model turn's operation that asked " +
  '(for example, a call asked in run_…/op/3 is named scripted-run_…/op/3), so the two can look alike.';

/** What the model's id for a call is, and why it may look like an operation id. */
export const MODEL_CALL_ID_HINT = `${MODEL_CALL_ID_BASE} ${SCRIPTED_NOTE}`;

/**
 * What the model's id `callId` is: MODEL_CALL_ID_HINT, the scripted model's note only when the id
 * looks like an operation id (it contains `/op/`).
 */
export function modelCallIdHint(callId: string): string {
  return callId.includes('/op/') ? MODEL_CALL_ID_HINT : MODEL_CALL_ID_BASE;
}

/** How a projection detail's keys read: the ids a newcomer asked about. */
const DETAIL_KEYS: Record<string, string> = {
  call_id: MODEL_CALL_ID_LABEL,
  op_id: 'operation',
  operation_id: 'operation',
};

/**
 * A projection item's detail in one line: text as it is, an object as `key value · ...` (nulls
 * left out; `call_id` read as MODEL_CALL_ID_LABEL, `op_id` as `operation`, `attempts 1` as `1 attempt`, run ids in values
 * shown short).
 */
export function detailText(detail: unknown): string {
  if (typeof detail === 'string') return detail;
  if (detail !== null && typeof detail === 'object' && !Array.isArray(detail)) {
    return Object.entries(detail)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) =>
        k === 'attempts' && typeof v === 'number'
          ? plural(v, 'attempt')
          : `${DETAIL_KEYS[k] ?? k} ${shortId(typeof v === 'string' ? v : JSON.stringify(v))}`,
      )
      .join(' · ');
  }
  return JSON.stringify(detail);
}

/**
 * A plan item's detail laid out for its row: `text` is detailText's without the model's call id
 * (returned apart as `modelCallId`, for a fold) and without a value the title already says (the
 * tool of `Call echo`), led by the call's own operation when `operationOf` knows it.
 */
export function planItemDetail(
  title: string,
  detail: unknown,
  operationOf: (callId: string) => string | undefined = () => undefined,
): { text: string; modelCallId?: string } {
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail))
    return { text: detail === undefined ? '' : detailText(detail) };
  const { call_id: callId, ...rest } = detail as Record<string, unknown>;
  const words = title.split(/\s+/);
  const kept = Object.fromEntries(
    Object.entries(rest).filter(([, v]) => !(typeof v === 'string' && words.includes(v))),
  );
  if (typeof callId !== 'string') return { text: detailText(kept) };
  const op = operationOf(callId);
  const text = detailText(op !== undefined ? { op_id: op, ...kept } : kept);
  return { text, modelCallId: callId };
}

/**
 * A plan summary as a newcomer reads it beside the usage line: the agent loop's `(0 of 1 tool
 * calls done)` says `finished` (a call waiting for its result has started, and usage counts it).
 */
export function planSummaryText(summary: string): string {
  return summary.replace(/\((\d+) of (\d+) tool calls done\)/g, '($1 of $2 tool calls finished)');
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** `YYYY-MM-DD HH:MM:SS` local time, 24-hour: the console's one way of writing a time. */
export function stamp(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(ms).slice(0, 8)}`;
}

/** `HH:MM:SS.mmm` local time, 24-hour (an event's time: `stamp`'s clock with milliseconds). */
export function clock(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** What an event's number is, wherever the console shows `#N` or asks for one. */
export const SEQ_HINT =
  "Entries in the run's log, numbered 1, 2, 3…: event #N is the N-th (the API calls the number its seq).";

/** The hint beside "View at event #": what the number is, and the range the run has. */
export function seqHint(lastSeq: number): string {
  return `event #N is an event's number in the run's log, its seq (1 to ${lastSeq})`;
}
