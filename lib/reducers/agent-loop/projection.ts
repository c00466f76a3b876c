/**
 * The projection the UI shows: the plan's items when the model proposed one (context.plan; key
 * `plan:<key>`, the status the model reported, see planItems), one item per call of the current
 * turn (key `call:<call_id>`; pending, in_progress, waiting, paused, completed, failed, blocked
 * for not executed, stopped), then `respond` (the reply or the task's end: in_progress while the model works, pending during
 * tools, waiting for the user, in_progress while the verifier runs, then completed / blocked /
 * failed / stopped), and a one-line summary (`; plan <done> of <n> done` appended with a plan).
 * docs/contracts/reducer.md, "Projection".
 */
import type { Projection, ProjectionItem } from '../../contracts/index.ts';
import { PROPOSE_PLAN, planSummary } from './plan-names.ts';
import type { AgentLoopCall, AgentLoopPlan, AgentLoopState } from './state.ts';
import { currentCall } from './turn.ts';

type ItemStatus = ProjectionItem['status'];

/** The plan the UI shows: one item per call of the current turn, then the reply. */
export function project(state: AgentLoopState): Projection {
  const items: ProjectionItem[] = state.plan !== undefined ? planItems(state, state.plan) : [];
  let done = 0;
  const calls = state.turn !== null ? state.turn.calls : [];
  for (const call of calls) {
    const status = callStatus(state, call);
    if (call.state === 'done') done += 1;
    items.push({
      key: `call:${call.call_id}`,
      title: `Call ${call.name || '(unnamed tool)'}`,
      status,
      detail: {
        call_id: call.call_id,
        tool: call.name,
        attempts: call.attempts,
        result: call.result ? call.result.status : null,
      },
    });
  }
  items.push({
    key: 'respond',
    title: state.mode === 'task' ? 'Finish the task' : 'Reply to the user',
    status: respondStatus(state),
  });
  const text = summary(state, done, calls.length);
  return { items, summary: state.plan !== undefined ? `${text}; ${planSummary(state.plan)}` : text };
}

/**
 * The plan's items (key `plan:<key>`) with the status the model reported: `waiting` while the
 * plan awaits its approval, an unfinished item `stopped` / `paused` with the run, `blocked`
 * once the run ended without it.
 */
function planItems(state: AgentLoopState, plan: AgentLoopPlan): ProjectionItem[] {
  const awaitingApproval = state.phase === 'tool' && currentCall(state)?.name === PROPOSE_PLAN;
  return plan.items.map((item) => {
    let status: ItemStatus = item.status;
    if (status !== 'completed') {
      if (state.phase === 'stopped') status = 'stopped';
      else if (state.phase === 'ended') status = 'blocked';
      else if (awaitingApproval) status = 'waiting';
      else if (status === 'in_progress' && state.budget !== null) status = 'paused';
    }
    return {
      key: `plan:${item.key}`,
      title: item.title,
      status,
      ...(item.note !== undefined && { detail: { note: item.note } }),
    };
  });
}

function callStatus(state: AgentLoopState, call: AgentLoopCall): ItemStatus {
  if (call.state === 'pending') return state.phase === 'stopped' ? 'stopped' : 'pending';
  if (call.state === 'waiting') return state.phase === 'stopped' ? 'stopped' : 'waiting';
  if (call.state === 'running') {
    if (state.phase === 'stopped') return 'stopped';
    return state.budget !== null ? 'paused' : 'in_progress';
  }
  const result = call.result ? call.result.status : 'error';
  if (result === 'succeeded') return 'completed';
  if (result === 'not_executed' || result === 'blocked') return 'blocked';
  return 'failed';
}

function respondStatus(state: AgentLoopState): ItemStatus {
  switch (state.phase) {
    case 'model':
      return state.budget !== null ? 'paused' : 'in_progress';
    case 'tool':
      return 'pending';
    case 'verify':
      return 'in_progress';
    case 'user':
      return 'waiting';
    case 'stopped':
      return 'stopped';
    default:
      if (state.outcome === 'failed') return 'failed';
      if (state.outcome === 'blocked') return 'blocked';
      return 'completed';
  }
}

function summary(state: AgentLoopState, done: number, total: number): string {
  const calls = total > 0 ? ` (${done} of ${total} tool calls done)` : '';
  if (state.budget !== null) {
    return `Paused: budget ${state.budget.which} exceeded (used ${state.budget.used} of ${state.budget.limit})`;
  }
  switch (state.phase) {
    case 'model':
      return `Thinking${calls}`;
    case 'tool':
      return `Running tools${calls}`;
    case 'verify':
      return 'Verifying the result';
    case 'user':
      return 'Waiting for the user';
    case 'stopped':
      return `Stopped${calls}`;
    default:
      return state.outcome === 'failed' ? 'Failed' : `Completed (${state.outcome})`;
  }
}
