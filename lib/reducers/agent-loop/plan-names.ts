/**
 * The plan's names and summary that the projection reads as well as the plan tools (plan.ts):
 * kept apart so that the projection does not import the plan's handlers, which answer through
 * response.ts, which projects (no import circle).
 */
import type { AgentLoopPlan } from './state.ts';

export const PROPOSE_PLAN = 'propose_plan';
export const UPDATE_PLAN = 'update_plan';

/** The plan's progress for the projection's summary, e.g. `plan 2 of 5 done`. */
export function planSummary(plan: AgentLoopPlan): string {
  const done = plan.items.filter((i) => i.status === 'completed').length;
  return `plan ${done} of ${plan.items.length} done`;
}
