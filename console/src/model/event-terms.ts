/**
 * One-line hints for the terms an expanded event shows: its operation and effect ids, and the
 * fields of its raw JSON a newcomer asks about (`state_rev`, `manifest`, `legacy`, `pinned`, the
 * tool-result `envelope`, ...). Pure.
 * docs/contracts/reducer.md ("Answer": effect_id is `{state_rev}:{i}`), lib/contracts/tool-result.ts
 * (`legacy`), lib/contracts/model-context.ts (the context manifest).
 */

/** What each term means, in one line. Keys are the JSON field names (and `operation`). */
export const EVENT_TERM_HINTS = {
  operation: 'operation: one model turn or tool call the run started, named run/op/N.',
  call_id:
    "call_id: the model's id for this call (the model names each call it asks for). The run's own id for the call is its operation.",
  effect_id:
    'effect: one thing the reducer (or, on a client-driven run, the client) asked for: call a tool, ask a person, ... A reducer names it state_rev:i (the i-th thing it asked for at that revision, from 0); a client, client:N (its operation no. N).',
  state_rev: "state_rev: the revision of the reducer's state; it goes up by one each time the state changes.",
  event_seq: 'event_seq: the event the reducer answered, by its number (#N) in this log.',
  digest_alg:
    "digest_alg: how the request's digest was made: sha256:rfc8785 is SHA-256 of the request's canonical JSON (RFC 8785).",
  manifest: 'manifest: what the model was shown this turn (which events and items went into its context).',
  legacy:
    'legacy: true: the tool did not answer in the standard result shape, so the runtime wrapped it; its writes and evidence are not checked.',
  resume_key:
    'resume_key (the delivery key): the name a waiting tool call gave its wait; whoever delivers the result quotes it.',
  pinned:
    "pinned: the registry versions the run was pinned to when it started: the tool catalogue, the policy and the agents (0: nothing published yet, the code's own). The policy gates the tool calls the service runs; a client-driven run's client runs its own tools, which the policy does not see.",
  envelope:
    "envelope: the tool-result envelope (raisin.tool-result/1), the one shape of a tool's result: its status and payload, what it read (reads), wrote (writes), produced (artifact_refs), proved (evidence), warned of (diagnostics) and suggests next (suggested_next_actions); an empty list: nothing of that kind.",
} as const;

type Term = keyof typeof EVENT_TERM_HINTS;
const JSON_TERMS: readonly Term[] = [
  'call_id',
  'effect_id',
  'state_rev',
  'event_seq',
  'digest_alg',
  'manifest',
  'legacy',
  'resume_key',
  'pinned',
  'envelope',
];

/** The JSON field names in `value`, searched to `depth` levels (objects and arrays). */
function keysOf(value: unknown, into: Set<string>, depth: number): Set<string> {
  if (depth < 0 || value === null || typeof value !== 'object') return into;
  const entries = Array.isArray(value) ? value.map((v) => ['', v] as const) : Object.entries(value);
  for (const [k, v] of entries) {
    if (k !== '') into.add(k);
    keysOf(v, into, depth - 1);
  }
  return into;
}

/**
 * The lines for an approval the policy gate opened (its JSON carries `gate: true`): what each of
 * its fields is, in words. The subject is the tool call the gate holds back until a person decides.
 */
export const GATE_HINTS = {
  gate: "gate: true: the service's policy gate opened this approval itself, before running the tool call; the call waits until a person approves or rejects it.",
  subject:
    'subject: what is approved: the tool call (kind tool_call), its summary (the policy rule that asked, when one did), and changes: the tool, its version and its arguments.',
  digest:
    'digest: a fingerprint of that exact call (the tool, its version and its arguments; digest_alg names how it is taken); approving quotes it, so if the call changed, the approval is refused.',
  request_id: "request_id: the approval's name (run/req/N), which approve and reject quote.",
  effect_id:
    'effect_id: the id the reducer gave the step this approval holds back (the tool call), as state_rev:i.',
} as const;

/**
 * Said after EVENT_TERM_HINTS.call_id only when the call id looks like an operation id (it
 * contains `/op/`): the scripted model's ids do.
 */
export const SCRIPTED_CALL_ID_NOTE =
  "The scripted model names its calls after the model turn's operation that asked (for example, a call asked in run_…/op/3 is named scripted-run_…/op/3), so the two can look alike.";

/** The call_id line for `callId`: the scripted model's note only when the id looks like an operation's. */
export function callIdTermHint(callId: string | undefined): string {
  return callId?.includes('/op/') === true
    ? `${EVENT_TERM_HINTS.call_id} ${SCRIPTED_CALL_ID_NOTE}`
    : EVENT_TERM_HINTS.call_id;
}

/** The first string under the key `key` in `value`, searched to `depth` levels. */
function firstString(value: unknown, key: string, depth: number): string | undefined {
  if (depth < 0 || value === null || typeof value !== 'object') return undefined;
  if (!Array.isArray(value)) {
    const own = (value as Record<string, unknown>)[key];
    if (typeof own === 'string') return own;
  }
  for (const v of Object.values(value)) {
    const found = firstString(v, key, depth - 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** ms since 1970 between 2001 and 2286: a number too small or too big is not read as a time. */
const isEpochMs = (v: unknown): v is number => typeof v === 'number' && v >= 1e12 && v < 1e13;

/**
 * The time fields `data` holds (a key ending in `_at`, to four levels down; `expires_at: null`
 * read as never), each as `opened_at: 2026-12-04 10:40:05`: the console's one time style, written
 * by `stamp` (a parameter, so this stays pure and the caller keeps the style).
 */
export function timeFieldLines(data: unknown, stamp: (ms: number) => string): string[] {
  const lines: string[] = [];
  const walk = (value: unknown, depth: number): void => {
    if (depth < 0 || value === null || typeof value !== 'object') return;
    for (const [k, v] of Array.isArray(value) ? value.map((x) => ['', x] as const) : Object.entries(value)) {
      if (k.endsWith('_at') && isEpochMs(v)) lines.push(`${k}: ${stamp(v)} (local time)`);
      else if (k === 'expires_at' && v === null) lines.push('expires_at: null: it never expires');
      else walk(v, depth - 1);
    }
  };
  walk(data, 4);
  return lines;
}

/** The gate's lines when `data` is an approval the policy gate opened (`gate: true`), else none. */
export function gateLines(data: unknown): string[] {
  if (data === null || typeof data !== 'object' || (data as { gate?: unknown }).gate !== true) return [];
  return [
    GATE_HINTS.gate,
    GATE_HINTS.subject,
    GATE_HINTS.digest,
    GATE_HINTS.request_id,
    GATE_HINTS.effect_id,
  ];
}

/**
 * The hint lines for the terms `data` holds (to four levels down), in EVENT_TERM_HINTS order;
 * the call_id line as callIdTermHint reads the first call id found.
 */
export function jsonTermHints(data: unknown): string[] {
  const keys = keysOf(data, new Set(), 4);
  return JSON_TERMS.filter((t) => keys.has(t)).map((t) =>
    t === 'call_id' ? callIdTermHint(firstString(data, 'call_id', 4)) : EVENT_TERM_HINTS[t],
  );
}

const nth = (i: number) => (i === 1 ? '1st' : i === 2 ? '2nd' : i === 3 ? '3rd' : `${i}th`);

/**
 * `3:0` read out: `the 1st thing the reducer asked for at state revision 3`; `client:1`: `the
 * client's operation no. 1` (`client:req:2`: its request no. 2); undefined when the id has another shape.
 */
export function effectText(effectId: string): string | undefined {
  const client = /^client:(req:)?(\d+)$/.exec(effectId);
  if (client !== null)
    return `the client's ${client[1] !== undefined ? 'request' : 'operation'} no. ${client[2]}`;
  const m = /^(\d+):(\d+)$/.exec(effectId);
  if (m === null) return undefined;
  return `the ${nth(Number(m[2]) + 1)} thing the reducer asked for at state revision ${m[1]}`;
}
