/**
 * Properties of the default agent reducer over generated runs: models that call known, unknown
 * and repeated tools; tools that succeed, fail, park or are gated by approvals; failures with
 * every retry flag; steers, budgets, cancellations, resumes, stops and stray events. At every
 * step RunDriver checks core's 13 validation rules, determinism and re-delivery.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Effect } from '../../lib/contracts/index.ts';
import { canonicalByteLength } from '../../lib/core/canonical.ts';
import type { AgentLoopContext, AgentLoopResponse, AgentLoopState } from '../../lib/reducers/index.ts';
import { RunDriver } from '../unit/agent-reducer-harness.ts';

const SCHEMA = { type: 'object' };
const TOOLS: NonNullable<AgentLoopContext['tools']> = [
  { name: 'lookup', kind: 'function', schema: SCHEMA, mutating: false },
  { name: 'update', kind: 'function', schema: SCHEMA, mutating: true },
];
const CALL_NAMES = ['lookup', 'update', 'teleport'];
const TERMINAL = new Set(['completed', 'failed', 'stopped']);

const Step = fc.record({ op: fc.nat(99), a: fc.nat(9), b: fc.boolean(), c: fc.boolean() });
type Step = { op: number; a: number; b: boolean; c: boolean };

const Scenario = fc.record({
  mode: fc.constantFrom('conversation' as const, 'task' as const),
  max_retries: fc.integer({ min: 0, max: 3 }),
  loop_limit: fc.integer({ min: 2, max: 4 }),
  steps: fc.array(Step, { maxLength: 80 }),
});

/** The opt-in checks of the context (plan, no-progress guard, verified completion). */
type Checks = Pick<AgentLoopContext, 'plan' | 'no_progress_turns' | 'verify_completion' | 'verifier_tool'>;
const Checks: fc.Arbitrary<Checks> = fc.record(
  {
    plan: fc.constantFrom('track' as const, 'approve' as const),
    no_progress_turns: fc.integer({ min: 1, max: 3 }),
    verify_completion: fc.constantFrom('partial' as const, 'ask_user' as const),
    verifier_tool: fc.constant('lookup'),
  },
  { requiredKeys: [] },
);
const CheckedScenario = fc.record({
  mode: fc.constantFrom('conversation' as const, 'task' as const),
  max_retries: fc.integer({ min: 0, max: 3 }),
  loop_limit: fc.integer({ min: 2, max: 4 }),
  steps: fc.array(Step, { maxLength: 80 }),
  checks: Checks,
});
const PLAN_CALLS = ['propose_plan', 'update_plan'];
/** Plan args: two plans (so some proposals change it) and updates of known and unknown keys. */
function planArgs(name: string, a: number): Record<string, unknown> {
  if (name === 'propose_plan') {
    const items = [{ key: 'a', title: 'A' }, ...(a % 2 === 0 ? [{ key: 'b', title: 'B' }] : [])];
    return { items };
  }
  return { key: a % 3 === 0 ? 'zz' : 'a', status: a % 2 === 0 ? 'completed' : 'in_progress' };
}

/** What the generated world observed, to check properties across steps. */
class Observer {
  expectedResults: string[] = [];
  /** Mutating calls that failed with an unknown outcome: never to be called again. */
  readonly unknownMutating = new Set<string>();
  readonly issues = new Map<string, number>();
  readonly cancels = new Map<string, number>();
  calls = 0;
  /** The model may call the plan tools. */
  plans = false;
}

function run(scenario: {
  mode: 'conversation' | 'task';
  max_retries: number;
  loop_limit: number;
  steps: Step[];
  checks?: Checks;
}) {
  const driver = new RunDriver('prop');
  const seen = new Observer();
  const context: AgentLoopContext = {
    instructions: 'Help.',
    tools: TOOLS,
    mode: scenario.mode,
    max_retries: scenario.max_retries,
    loop_limit: scenario.loop_limit,
    ...scenario.checks,
  };
  seen.plans = scenario.checks?.plan !== undefined;
  observe(driver, seen, driver.start('go', context));
  for (const step of scenario.steps) {
    if (TERMINAL.has(driver.status)) {
      // After the run ended nothing the reducer answers may carry an effect.
      const late = driver.deliver('stopped', { reason: 'late' });
      expect(late.effects).toEqual([]);
      break;
    }
    const response = act(driver, seen, step);
    if (response !== null) observe(driver, seen, response);
  }
  return { driver, seen };
}

/** Delivers the event `step` picks for what the reducer waits for. */
function act(driver: RunDriver, seen: Observer, step: Step): AgentLoopResponse | null {
  const pending = driver.pending;
  const { op, a, b, c } = step;
  if (op >= 96) return driver.deliver('stopped', { reason: 'user' });
  if (op >= 92) {
    driver.status = 'paused';
    return driver.deliver('budget_exceeded', { which: 'max_operations', limit: 5, used: 5 });
  }
  if (op >= 88) {
    driver.status = driver.openRequests.length > 0 ? 'waiting' : 'running';
    return driver.deliver('resumed', { from_checkpoint_no: null });
  }
  if (op >= 84 && pending !== null) {
    if (pending.kind === 'call_tool' && pending.for_call_id !== undefined) {
      seen.cancels.set(pending.for_call_id, (seen.cancels.get(pending.for_call_id) ?? 0) + 1);
    }
    driver.status = b ? 'running' : 'paused';
    return driver.deliver('operation_cancelled', { acknowledged: true }, { effect_id: pending.effect_id });
  }
  if (op >= 78) return driver.steer(`steer ${a}`);
  if (op >= 74) {
    // A stray event for an effect nobody waits for.
    return driver.deliver(
      'tool_result',
      {
        call_id: 'ghost',
        tool: 'lookup',
        envelope: { envelope: 'raisin.tool-result/1', status: 'succeeded' },
      },
      { effect_id: `0:${a}` },
    );
  }
  if (pending === null) return null;
  switch (pending.kind) {
    case 'request_model_turn': {
      if (op >= 60 && a < 4) return driver.fail('transient', b, c);
      const count = a % 3;
      const calls = Array.from({ length: count }, (_, i) => {
        seen.calls += 1;
        // `c` repeats one read exactly (loop detection); otherwise names and args vary.
        const names = seen.plans ? [...CALL_NAMES, ...PLAN_CALLS] : CALL_NAMES;
        const name = c ? 'lookup' : (names[(a + i) % names.length] ?? 'lookup');
        const args = PLAN_CALLS.includes(name) ? planArgs(name, a + i) : { id: c ? '0' : String(a % 2) };
        return { call_id: `k${seen.calls}`, name, args };
      });
      const text = a === 9 && count === 0 ? '' : `reply ${a}`;
      const response = driver.modelTurn(text, calls);
      if (response.state_rev > 0 && response.effects.length > 0)
        seen.expectedResults = calls.map((x) => x.call_id);
      return response;
    }
    case 'call_tool': {
      const callId = pending.for_call_id ?? '';
      const gated = driver.openRequests.find(
        (r) => r.effect_id === pending.effect_id && r.kind === 'approval',
      );
      const parked = driver.openRequests.find(
        (r) => r.effect_id === pending.effect_id && r.kind === 'result',
      );
      if (op < 35) {
        if (parked !== undefined) driver.openRequests = driver.openRequests.filter((r) => r !== parked);
        const status = (['succeeded', 'failed', 'waiting', 'blocked'] as const)[a % 4] ?? 'succeeded';
        const response = driver.toolResult(
          `out ${a}`,
          status,
          status === 'waiting' ? { resume_key: `rk-${callId}` } : {},
        );
        if (status === 'waiting') {
          driver.openRequests = [
            ...driver.openRequests,
            { request_id: `res-${driver.seq}`, kind: 'result', effect_id: pending.effect_id },
          ];
          driver.status = 'waiting';
        }
        return response;
      }
      if (op < 45) {
        if (c && pending.mutating) seen.unknownMutating.add(callId);
        return driver.fail('transient', b, c);
      }
      if (op < 52) {
        if (gated === undefined && parked === undefined) {
          // Core's policy gate opens an approval for the call: no reducer event, the run waits.
          driver.openRequests = [
            ...driver.openRequests,
            { request_id: `appr-${driver.seq}`, kind: 'approval', effect_id: pending.effect_id },
          ];
          driver.status = 'waiting';
        }
        return null;
      }
      const open = gated ?? parked;
      if (open === undefined) return driver.toolResult('ok');
      if (op < 66 && gated !== undefined) {
        return driver.deliver(
          'request_resolved',
          { request_id: gated.request_id, kind: 'approval', decision: b ? 'rejected' : 'approved' },
          { effect_id: pending.effect_id },
        );
      }
      return driver.deliver(
        'request_closed',
        { request_id: open.request_id, reason: 'expired' },
        { effect_id: pending.effect_id },
      );
    }
    case 'request_approval': {
      // The reducer's own plan approval: approved quoting its digest (or not), rejected, expired.
      const open = driver.requestFor(pending.effect_id);
      if (op < 60) {
        const digest = a < 7 ? pending.subject.digest : 'f'.repeat(64);
        return driver.deliver(
          'request_resolved',
          {
            request_id: open.request_id,
            kind: 'approval',
            decision: b ? 'rejected' : 'approved',
            subject_digest: digest,
          },
          { effect_id: pending.effect_id },
        );
      }
      return driver.deliver(
        'request_closed',
        { request_id: open.request_id, reason: 'expired' },
        { effect_id: pending.effect_id },
      );
    }
    case 'ask_user': {
      if (op < 55) return driver.answer(`answer ${a}`);
      if (op < 65) {
        const open = driver.requestFor(pending.effect_id);
        return driver.deliver(
          'request_closed',
          { request_id: open.request_id, reason: 'expired' },
          { effect_id: pending.effect_id },
        );
      }
      // A failure event addressed to the question: not an operation the reducer waits on.
      return driver.deliver(
        'operation_failed',
        { error_class: 'x', retryable: b, outcome_unknown: c, message: 'x' },
        { effect_id: pending.effect_id },
      );
    }
    default:
      return null;
  }
}

function observe(driver: RunDriver, seen: Observer, response: AgentLoopResponse): void {
  for (const effect of response.effects) checkEffect(seen, effect, driver);
  const state = response.state as AgentLoopState;
  if (
    state.plan_mode === 'approve' &&
    response.effects.some((e) => e.kind === 'call_tool' && e.for_call_id)
  ) {
    // A model's tool call runs only under an approved plan.
    expect(state.plan?.approved_digest).toBe(state.plan?.digest);
  }
  expect(canonicalByteLength(response.state)).toBeLessThan(16 * 1024);
}

function checkEffect(seen: Observer, effect: Effect, driver: RunDriver): void {
  if (effect.kind === 'request_model_turn') {
    // Every call of the previous turn is answered, once, in order (again when the turn is re-asked).
    expect((effect.tool_results ?? []).map((r) => r.call_id)).toEqual(seen.expectedResults);
  }
  if (effect.kind === 'call_tool' && effect.for_call_id !== undefined) {
    const id = effect.for_call_id;
    expect(seen.unknownMutating.has(id)).toBe(false);
    const issued = (seen.issues.get(id) ?? 0) + 1;
    seen.issues.set(id, issued);
    const maxRetries = (driver.state as { max_retries: number }).max_retries;
    expect(issued).toBeLessThanOrEqual(1 + maxRetries + (seen.cancels.get(id) ?? 0));
  }
}

describe('agent loop properties over generated runs', () => {
  it('every answer is valid, deterministic and idempotent; calls are answered, bounded and never blindly repeated', () => {
    fc.assert(
      fc.property(Scenario, (scenario) => {
        const { driver } = run(scenario);
        expect(driver.maxStateBytes).toBeLessThan(16 * 1024);
      }),
      { numRuns: 500 },
    );
  });

  it('with plan approval, the no-progress guard and verified completion on: every answer stays valid, and tools run only under an approved plan', () => {
    fc.assert(
      fc.property(CheckedScenario, (scenario) => {
        const { driver } = run(scenario);
        expect(driver.maxStateBytes).toBeLessThan(16 * 1024);
      }),
      { numRuns: 500 },
    );
  });

  it('replaying the same event sequence gives the same states byte for byte', () => {
    fc.assert(
      fc.property(Scenario, (scenario) => {
        const first = run(scenario).driver;
        const second = run(scenario).driver;
        expect(second.responses).toEqual(first.responses);
        expect(second.log).toEqual(first.log);
      }),
      { numRuns: 50 },
    );
  });
});
