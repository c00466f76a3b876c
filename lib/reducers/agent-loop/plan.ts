/**
 * The plan (context.plan; off unless set): the reserved domain tools `propose_plan` and
 * `update_plan`, which the reducer offers to the model and answers itself (never a call_tool).
 *
 * - propose_plan {items: [{key, title}]} (1 to 50 items, keys unique, key <= 64 and title <= 200
 *   characters) records the plan; an item whose key and title are unchanged keeps its status.
 * - update_plan {key, status: pending|in_progress|completed|blocked, note?} sets an item's status;
 *   an item newly completed is progress (for the no-progress guard).
 * - `approve` mode: a plan whose digest is not the approved one is put to a person with
 *   request_approval {subject: {kind: 'plan', digest, digest_alg: 'sha256:rfc8785', summary,
 *   changes: {items, approved_digest}}}; digest = sha256 over the canonical JSON of
 *   {kind: 'plan', items: [{key, title}]} (statuses are progress, not the plan). The call is
 *   answered `succeeded` only by an approval whose subject_digest quotes that digest; a rejection
 *   or an approval quoting another digest answers it `refused`. Until the current plan is
 *   approved, every other tool call is answered `refused` without running. A changed plan needs a
 *   new approval; proposing the approved plan again needs none.
 * docs/contracts/reducer.md ("request_approval", "Writing a deterministic reducer": digests over
 * canonical JSON; "Projection").
 */
import { canonical, clip, isObject } from './json.ts';
import { PROPOSE_PLAN, UPDATE_PLAN } from './plan-names.ts';
import { emit, type Reduction } from './response.ts';
import { sha256Hex } from './sha256.ts';
import type { AgentLoopCall, AgentLoopPlanItem, AgentLoopState, PlanItemStatus } from './state.ts';
import { answer, MAX_NOTE_CHARS } from './turn.ts';

export { PROPOSE_PLAN, planSummary, UPDATE_PLAN } from './plan-names.ts';

const MAX_ITEMS = 50;
const MAX_KEY_CHARS = 64;
const MAX_TITLE_CHARS = 200;
const MAX_ITEM_NOTE_CHARS = 200;
const STATUSES: PlanItemStatus[] = ['pending', 'in_progress', 'completed', 'blocked'];

/** The two plan tools as request_model_turn offers them. */
export const PLAN_TOOLS = [
  {
    name: PROPOSE_PLAN,
    kind: 'domain' as const,
    description:
      'Propose the plan for this task as ordered items (replaces any earlier plan). When plan approval is on, no other tool runs until a person approves the plan.',
    schema: {
      type: 'object',
      properties: {
        items: {
          type: 'array',
          minItems: 1,
          maxItems: MAX_ITEMS,
          items: {
            type: 'object',
            properties: { key: { type: 'string' }, title: { type: 'string' } },
            required: ['key', 'title'],
          },
        },
      },
      required: ['items'],
    },
  },
  {
    name: UPDATE_PLAN,
    kind: 'domain' as const,
    description: 'Report progress on one plan item: its new status and an optional short note.',
    schema: {
      type: 'object',
      properties: {
        key: { type: 'string' },
        status: { type: 'string', enum: STATUSES },
        note: { type: 'string' },
      },
      required: ['key', 'status'],
    },
  },
];

/** True when `name` is a plan tool and the plan is on. */
export function isPlanCall(state: AgentLoopState, name: string): boolean {
  return state.plan_mode !== undefined && (name === PROPOSE_PLAN || name === UPDATE_PLAN);
}

/** In approve mode, true until the current plan is approved (other tools do not run). */
export function planGateClosed(state: AgentLoopState): boolean {
  if (state.plan_mode !== 'approve') return false;
  return state.plan === undefined || state.plan.approved_digest !== state.plan.digest;
}

/** The note a gated call is answered with. */
export const GATED_NOTE =
  'Not executed: this run needs an approved plan first. Propose one with propose_plan and wait for its approval.';

/**
 * Runs a plan call: answers it, or (a plan needing approval) emits request_approval and returns
 * true (the call stays current; the approval's answer decides it).
 */
export function runPlanCall(ctx: Reduction, call: AgentLoopCall): boolean {
  if (call.name === UPDATE_PLAN) {
    updatePlan(ctx.state, call);
    return false;
  }
  const items = readItems(call.args);
  if (typeof items === 'string') {
    answer(call, 'error', `Error: ${items}`);
    return false;
  }
  const state = ctx.state;
  const previous = state.plan;
  for (const item of items) {
    const kept = previous?.items.find((p) => p.key === item.key && p.title === item.title);
    if (kept !== undefined) {
      item.status = kept.status;
      if (kept.note !== undefined) item.note = kept.note;
    }
  }
  const digest = planDigest(items);
  const approved = previous !== undefined ? previous.approved_digest : null;
  state.plan = { items, digest, approved_digest: approved };
  if (state.plan_mode !== 'approve') {
    answer(call, 'succeeded', `Plan recorded (${items.length} items). Report progress with update_plan.`);
    return false;
  }
  if (approved === digest) {
    answer(
      call,
      'succeeded',
      'This plan is already approved. Go on with it; report progress with update_plan.',
    );
    return false;
  }
  call.state = 'running';
  call.attempts += 1;
  delete call.args;
  state.phase = 'tool';
  state.awaiting = emit(ctx, {
    kind: 'request_approval',
    subject: {
      kind: 'plan',
      digest,
      digest_alg: 'sha256:rfc8785',
      summary: clip(
        `Approve the plan: ${items.map((i, n) => `${n + 1}. ${i.title}`).join('; ')}`,
        MAX_NOTE_CHARS,
      ),
      changes: { items: items.map(({ key, title }) => ({ key, title })), approved_digest: approved },
    },
  });
  return true;
}

/**
 * The answer to a plan's approval request: approved and quoting the current plan's digest →
 * the plan is approved and the call answered succeeded; otherwise the call is refused.
 */
export function onPlanDecision(ctx: Reduction, call: AgentLoopCall): void {
  const state = ctx.state;
  const plan = state.plan;
  const data = ctx.data;
  const reason = typeof data.reason === 'string' && data.reason !== '' ? ` (${data.reason})` : '';
  if (plan === undefined) {
    answer(call, 'error', 'Error: no plan to approve.');
  } else if (data.decision !== 'approved') {
    answer(
      call,
      'refused',
      `The plan was not approved${reason}. Propose a different plan, or ask the user what to change.`,
    );
  } else if (data.subject_digest !== plan.digest) {
    ctx.diagnostics.push({
      code: 'approval_digest_mismatch',
      severity: 'warning',
      message: `approval quotes ${String(data.subject_digest)}, the plan is ${plan.digest}`,
      seq: ctx.event.seq,
    });
    answer(call, 'refused', 'The approval did not quote this plan: it is not approved. Propose it again.');
  } else {
    plan.approved_digest = plan.digest;
    answer(call, 'succeeded', 'The plan was approved. Go on with it; report progress with update_plan.');
  }
}

/** sha256:rfc8785 of {kind: 'plan', items: [{key, title}]}. */
export function planDigest(items: { key: string; title: string }[]): string {
  return sha256Hex(canonical({ kind: 'plan', items: items.map(({ key, title }) => ({ key, title })) }));
}

/** The items of propose_plan's args, or what is wrong with them. */
function readItems(args: unknown): AgentLoopPlanItem[] | string {
  const raw = isObject(args) ? args.items : undefined;
  if (!Array.isArray(raw) || raw.length === 0) return 'items must be a non-empty array of {key, title}.';
  if (raw.length > MAX_ITEMS) return `a plan has at most ${MAX_ITEMS} items.`;
  const items: AgentLoopPlanItem[] = [];
  for (let i = 0; i < raw.length; i++) {
    const item = raw[i];
    const key = isObject(item) && typeof item.key === 'string' ? item.key.trim() : '';
    const title = isObject(item) && typeof item.title === 'string' ? item.title.trim() : '';
    if (key === '' || title === '') return `items[${i}] needs a non-empty key and title.`;
    if (key.length > MAX_KEY_CHARS || title.length > MAX_TITLE_CHARS) {
      return `items[${i}]: a key has at most ${MAX_KEY_CHARS} and a title at most ${MAX_TITLE_CHARS} characters.`;
    }
    if (items.some((it) => it.key === key)) return `items[${i}] repeats the key ${key}.`;
    items.push({ key, title, status: 'pending' });
  }
  return items;
}

/** update_plan: sets an item's status (and note); an item newly completed is progress. */
function updatePlan(state: AgentLoopState, call: AgentLoopCall): void {
  const plan = state.plan;
  const args = isObject(call.args) ? call.args : {};
  if (plan === undefined) {
    answer(call, 'error', 'Error: there is no plan yet; propose one with propose_plan.');
    return;
  }
  if (planGateClosed(state)) {
    answer(call, 'refused', 'Not executed: the plan is not approved yet.');
    return;
  }
  const item = plan.items.find((i) => i.key === args.key);
  const status = STATUSES.find((s) => s === args.status);
  if (item === undefined || status === undefined) {
    const keys = plan.items.map((i) => i.key).join(', ');
    answer(call, 'error', `Error: key must be one of ${keys} and status one of ${STATUSES.join(', ')}.`);
    return;
  }
  if (status === 'completed' && item.status !== 'completed' && state.progress !== undefined) {
    state.progress.progressed = true;
  }
  item.status = status;
  if (typeof args.note === 'string' && args.note !== '') item.note = clip(args.note, MAX_ITEM_NOTE_CHARS);
  const done = plan.items.filter((i) => i.status === 'completed').length;
  answer(call, 'succeeded', `Plan item ${item.key} is ${status} (${done} of ${plan.items.length} done).`);
}
