/**
 * Delegation over the ports: starting a child run for a delegate operation, handing an ended
 * child's outcome back to its parent, and stopping the children of an ended parent.
 * docs/contracts/run-lifecycle.md ("child runs with a durable mailbox", "Budgets": max_children,
 * max_live_children, max_depth; the sweeper "delivers owed child hand-backs, stops children of
 * ended parents"); docs/reference/storage.md (child links);
 * docs/architecture.md, "The sweeper".
 *
 * The mailbox is durable because a hand-back is owed by the child's record (`owed: handback`,
 * set by the commit that ends it) until it is delivered; the duty is tried right after the end
 * and otherwise by the sweeper, and delivering twice adds nothing (core's `childEnded`).
 *
 * The one race, a child that ends before its parent has committed that it waits for it, is
 * closed from both sides: the child's hand-back is deferred while the parent's delegate
 * operation is still in flight, and the parent, once it rests waiting, collects every child that
 * has already ended.
 */
import { randomInt, randomUUID } from 'node:crypto';
import type { z } from 'zod';
import {
  type Control,
  type ControlAck,
  childOfResumeKey,
  DelegateArgs,
  DelegateMessageArgs,
  isTerminalStatus,
  type Operation,
  type OwedDuty,
  type RunRecord,
  type ToolResultEnvelope,
} from '../contracts/index.ts';
import { admit, type QuotaUsage, quotaWindowOf } from '../core/admission.ts';
import type { Caller } from '../core/authority.ts';
import {
  type ChildRunPlan,
  childContextOf,
  childStartedEnvelope,
  childTermsOf,
  delegationFailedEnvelope,
  messageSentEnvelope,
  planChildRun,
  treeBoundOf,
} from '../core/delegation.ts';
import { quotaKeyOf, runtimeKeyOf } from '../core/principal.ts';
import { childEnded, createRun as createRunRecord, settleOwed } from '../core/run-machine.ts';
import { readDecideCommit } from './commit-loop.ts';
import { commitOf, type Delegation, type EngineDeps, needsStep, type OwedReport, wake } from './deps.ts';
import { handBackOf, schemaProblem } from './hand-back.ts';
import { CommitRejected } from './ports.ts';

/** The caller delegation acts as when it stops children: a system caller (always authorized). */
export const DELEGATION_CALLER: Caller = { principal: { kind: 'system', id: 'agent-runs/delegation' } };

/** What delegation needs besides the deps: the control use case, to stop children. */
export interface DelegationHooks {
  applyControl(runId: string, control: Control, caller: Caller): Promise<ControlAck>;
}

/** How a hand-back attempt ended: delivered to the parent, not needed, or deferred (retry later). */
type HandBack = 'delivered' | 'not_needed' | 'deferred';

/**
 * The call_tool args of `op` (without the runtime's `__raisin_context`) parsed by `schema`, or the
 * failed envelope (invalid_input, `code`) naming the first field that is wrong as `args.<path>`.
 * Throws when `op` is not a call_tool operation (`what` names it).
 */
function toolArgsOf<T>(
  op: Operation,
  schema: z.ZodType<T>,
  code: string,
  what: string,
): { args: T } | { failed: ToolResultEnvelope } {
  const effect = op.effect;
  if (effect.kind !== 'call_tool') throw new Error(`${what} is a call_tool operation`);
  const { __raisin_context: _context, ...raw } = effect.args;
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { args: parsed.data };
  const issue = parsed.error.issues[0];
  const field = issue !== undefined && issue.path.length > 0 ? `args.${issue.path.join('.')}` : 'args';
  return {
    failed: delegationFailedEnvelope(
      op.op_id,
      'invalid_input',
      code,
      `${field}: ${issue?.message ?? 'invalid'}`,
    ),
  };
}

/** The delegate operation's args, or the failed envelope naming the field that is wrong. */
function delegateArgsOf(parent: RunRecord, op: Operation): DelegateArgs | ToolResultEnvelope {
  const parsed = toolArgsOf(op, DelegateArgs, 'delegate_args_invalid', 'a delegation');
  if ('failed' in parsed) return parsed.failed;
  const args = parsed.args;
  if (args.subject !== undefined && args.subject.workspace !== parent.subject.workspace) {
    return delegationFailedEnvelope(
      op.op_id,
      'invalid_input',
      'delegate_args_invalid',
      `args.subject.workspace: a child run stays in its parent's workspace (${parent.subject.workspace})`,
    );
  }
  const schema = args.returns?.schema;
  const problem = schema !== undefined ? schemaProblem(schema) : null;
  if (problem !== null) {
    return delegationFailedEnvelope(
      op.op_id,
      'invalid_input',
      'delegate_args_invalid',
      `args.returns.schema: not a JSON Schema (${problem})`,
    );
  }
  return args;
}

/** The record of a child run `plan` describes, created at `now`, holding live-run `slot` when one. */
function childRunRecord(
  dc: DelegationDeps,
  parent: RunRecord,
  op: Operation,
  plan: ChildRunPlan,
  at: { runId: string; reducer: NonNullable<ChildRunPlan['reducer']>; now: number; slot: number | undefined },
): ReturnType<typeof createRunRecord> {
  const { runId, reducer, now, slot } = at;
  return createRunRecord(
    {
      run_id: runId,
      principal: parent.principal,
      subject: plan.subject,
      reducer,
      input: plan.input,
      ...(plan.objective !== undefined ? { objective: plan.objective } : {}),
      ...(plan.context !== undefined ? { context: plan.context } : {}),
      budgets: plan.budgets,
      reserved: plan.reserved,
      ...(plan.returns !== undefined ? { returns: plan.returns } : {}),
      ...(plan.scope !== undefined ? { scope: plan.scope } : {}),
      on_exceeded: plan.on_exceeded,
      executor_config: plan.executor_config,
      // A child runs under the registries its parent was admitted with.
      ...(parent.pinned !== undefined ? { pinned: parent.pinned } : {}),
      parent_run_id: plan.parent_run_id,
      parent_op_id: op.op_id,
      depth: plan.depth,
      wake_delay_ms: dc.wakeGraceMs,
      // A child never runs at a lower tier than the run that delegated to it.
      risk_tier: parent.risk_tier,
      ...(slot !== undefined ? { quota_slot: slot } : {}),
    },
    now,
  );
}

/**
 * The run context a child inherits when its delegation gives none: the parent's (tools,
 * instructions, mode) as a task, since a child must end (and hand back) on its own, never wait
 * for a user; undefined when the parent started without one.
 */
async function inheritedContext(dc: DelegationDeps, parent: RunRecord): Promise<unknown> {
  const [started] = await dc.store.readEvents(parent.run_id, 0, 1);
  const inherited = started?.kind === 'run_started' ? started.data.context : undefined;
  return inherited === undefined ? undefined : childContextOf(inherited);
}

async function startChild(dc: DelegationDeps, parent: RunRecord, op: Operation): Promise<ToolResultEnvelope> {
  const args = delegateArgsOf(parent, op);
  if ('envelope' in args) return args;
  const inherited = args.context === undefined ? await inheritedContext(dc, parent) : undefined;
  if (inherited !== undefined) args.context = inherited;
  const planned = planChildRun(parent, op.op_id, args, dc.clock.now());
  if ('refused' in planned) {
    const errorClass =
      planned.refused === 'delegate_subject_too_long' ? 'invalid_input' : 'permission_denied';
    return delegationFailedEnvelope(op.op_id, errorClass, planned.refused, planned.message);
  }
  const plan = planned;
  if (plan.reducer === null) {
    return delegationFailedEnvelope(
      op.op_id,
      'invalid_input',
      'delegate_reducer_missing',
      'args.reducer is required when the parent run has no reducer',
    );
  }
  const principalKey = runtimeKeyOf(parent.principal);
  const existing = await dc.store.findByCreateKey(principalKey, plan.create_key);
  if (existing !== null) return adopt(dc, parent, op, existing.run_id, plan.wait);
  // The deployment's tree bounds, then the root principal's quota: a refusal writes nothing.
  const bound = treeBoundOf(parent, dc.admission);
  if (bound !== null)
    return delegationFailedEnvelope(op.op_id, 'permission_denied', bound.code, bound.message);
  const resolved = await dc.reducers.resolve(plan.reducer);
  if (resolved === null) {
    return delegationFailedEnvelope(
      op.op_id,
      'not_found',
      'reducer_not_found',
      `no reducer at ${plan.reducer.function_path}`,
    );
  }
  const reducer = { ...plan.reducer, artifact_hash: resolved.artifact_hash };
  const runId = `run_${randomUUID().replaceAll('-', '')}`;
  // A child holds a live-run slot of its tree's principal (the user who started the tree, for
  // an agent the user it acts for), as a top-level create does; a system principal's tree is exempt.
  const maxLive = dc.admission.max_live_runs;
  const quotaKey =
    maxLive !== undefined && parent.principal.kind !== 'system' ? quotaKeyOf(parent.principal) : null;
  const childRecord = (now: number, slot: number | undefined) =>
    childRunRecord(dc, parent, op, plan, { runId, reducer, now, slot });
  try {
    return await readDecideCommit<QuotaUsage | null, ToolResultEnvelope>(dc, {
      read: () =>
        quotaKey === null
          ? Promise.resolve(null)
          : dc.store.readQuota(quotaKey, quotaWindowOf(dc.clock.now())),
      decide(usage) {
        const now = dc.clock.now();
        let slot: number | undefined;
        if (usage !== null && maxLive !== undefined) {
          // Only the live-run limit: the creation rate bounds clients' creates, not the runtime's.
          const admitted = admit(
            { max_live_runs: maxLive },
            usage,
            parent.risk_tier,
            now,
            false,
            randomInt(1 << 30),
          );
          if (!admitted.ok) {
            return {
              done: delegationFailedEnvelope(
                op.op_id,
                'permission_denied',
                admitted.code,
                `the child would take a live-run slot of ${quotaKey}: ${admitted.message}`,
              ),
            };
          }
          slot = admitted.slot;
        }
        return {
          commit: {
            ...commitOf(childRecord(now, slot), null),
            createKey: { principalKey, key: plan.create_key },
            parentLink: parent.run_id,
            ...(quotaKey !== null ? { quota: { principalKey: quotaKey } } : {}),
          },
          async after(child: RunRecord): Promise<ToolResultEnvelope> {
            await wake(dc, child.run_id);
            dc.log({
              level: 'info',
              message: 'child run started',
              run_id: parent.run_id,
              child_run_id: child.run_id,
            });
            return childStartedEnvelope(op.op_id, child.run_id, { reserved: plan.reserved, wait: plan.wait });
          },
        };
      },
      // Another create of the principal took the slot first: read the quota again and retry.
      // Exhausted, the loop throws store_unavailable (retryable): the operation is dispatched again.
      retryOn: ['quota_moved'],
      attempts: quotaKey !== null ? 8 : 1,
      jitter: true,
      runId: parent.run_id,
    });
  } catch (err) {
    if (!(err instanceof CommitRejected)) throw err;
    if (err.code === 'create_key_taken') {
      const again = await dc.store.findByCreateKey(principalKey, plan.create_key);
      if (again !== null) return adopt(dc, parent, op, again.run_id, plan.wait);
    }
    if (err.code === 'subject_taken') {
      return delegationFailedEnvelope(
        op.op_id,
        'conflict',
        'subject_taken',
        `a live run already holds ${plan.subject.workspace}:${plan.subject.path}`,
      );
    }
    throw err;
  }
}

/** The child this operation created before (a re-dispatch): wait for it, or take its end now. */
async function adopt(
  dc: DelegationDeps,
  parent: RunRecord,
  op: Operation,
  childId: string,
  wait: boolean,
): Promise<ToolResultEnvelope> {
  const child = await dc.store.getRun(childId);
  if (child === null || child.parent_run_id !== parent.run_id || child.parent_op_id !== op.op_id) {
    return delegationFailedEnvelope(
      op.op_id,
      'conflict',
      'create_key_taken',
      `the create key of this delegation names run ${childId}, which is not its child`,
    );
  }
  const ended = await handBackOf(dc.store, child);
  return ended !== null
    ? { ...ended, operation_id: op.op_id }
    : childStartedEnvelope(op.op_id, child.run_id, childTermsOf(child, wait));
}

async function handBack(dc: DelegationDeps, child: RunRecord): Promise<HandBack> {
  const envelope = await handBackOf(dc.store, child);
  const parentId = child.parent_run_id;
  if (envelope === null || parentId === undefined) return 'not_needed';
  return readDecideCommit<RunRecord | null, HandBack>(dc, {
    read: () => dc.store.getRun(parentId),
    decide(parent) {
      if (parent === null || isTerminalStatus(parent.status)) return { done: 'not_needed' };
      const result = childEnded(parent, child.run_id, envelope, dc.clock.now());
      if (!result.ok) {
        // The parent has not yet committed that it waits for this child: it collects it then.
        const inFlight = child.parent_op_id !== undefined && parent.operation?.op_id === child.parent_op_id;
        return { done: inFlight ? 'deferred' : 'not_needed' };
      }
      return {
        commit: commitOf(result, parent.version),
        async after(stored): Promise<HandBack> {
          if (needsStep(stored)) await wake(dc, stored.run_id);
          dc.log({
            level: 'info',
            message: 'child handed back',
            run_id: parentId,
            child_run_id: child.run_id,
          });
          return 'delivered';
        },
      };
    },
    attempts: 8,
    jitter: false,
    exhausted: () => 'deferred',
  });
}

/**
 * Stops each live run of `ids` with a system `stop` (`control_id` makes a repeat a duplicate);
 * an ended one is skipped, so its log gets no rejected control. Returns how many were stopped.
 */
async function stopRuns(
  dc: DelegationDeps,
  ids: Iterable<string>,
  controlId: string,
  reason: string,
): Promise<number> {
  let stopped = 0;
  for (const id of ids) {
    const child = await dc.store.getRun(id);
    if (child === null || isTerminalStatus(child.status)) continue;
    const ack = await dc.applyControl(
      id,
      { control_id: controlId, command: 'stop', reason },
      DELEGATION_CALLER,
    );
    if (ack.ack === 'applied') stopped += 1;
    dc.log({
      level: 'info',
      message: `child stopped: ${reason}`,
      run_id: child.parent_run_id,
      child_run_id: id,
    });
  }
  return stopped;
}

/** Every child linked to an ended parent (also one a worker that lost its lease created). */
async function stopChildren(dc: DelegationDeps, parent: RunRecord): Promise<number> {
  return stopRuns(
    dc,
    await dc.store.listChildren(parent.run_id),
    `parent_ended:${parent.run_id}`,
    'parent_ended',
  );
}

/** Commits `record` with `duty` settled, re-reading on a stale version. */
async function settle(dc: DelegationDeps, record: RunRecord, duty: OwedDuty): Promise<RunRecord> {
  let current = record;
  let first = true;
  return readDecideCommit<RunRecord | null, RunRecord>(dc, {
    async read() {
      if (first) {
        first = false;
        return record;
      }
      return dc.store.getRun(record.run_id);
    },
    decide(read) {
      if (read === null) return { done: current };
      current = read;
      const settled = settleOwed(read, duty, dc.clock.now());
      if (!settled.ok) return { done: read };
      return { commit: commitOf(settled, read.version), after: (stored) => stored };
    },
    attempts: 8,
    jitter: false,
    exhausted: () => current,
  });
}

async function settleEnded(dc: DelegationDeps, record: RunRecord): Promise<OwedReport> {
  const report: OwedReport = { handed_back: 0, children_stopped: 0 };
  if (!isTerminalStatus(record.status) || !('owed' in record)) return report;
  let current: RunRecord = record;
  if (record.owed.includes('stop_children')) {
    report.children_stopped += await stopChildren(dc, current);
    current = await settle(dc, current, 'stop_children');
  }
  if ('owed' in current && current.owed.includes('handback')) {
    const outcome = await handBack(dc, current);
    if (outcome === 'delivered') report.handed_back += 1;
    if (outcome !== 'deferred') current = await settle(dc, current, 'handback');
  }
  return report;
}

async function collectEnded(dc: DelegationDeps, parent: RunRecord): Promise<number> {
  let collected = 0;
  const awaited = parent.open_requests.flatMap((r) =>
    r.kind === 'result' && childOfResumeKey(r.resume_key) !== null
      ? [childOfResumeKey(r.resume_key) as string]
      : [],
  );
  for (const childId of new Set([...awaited, ...parent.live_children])) {
    const child = await dc.store.getRun(childId);
    if (child === null || !isTerminalStatus(child.status)) continue;
    if (!('owed' in child) || !child.owed.includes('handback')) continue;
    collected += (await settleEnded(dc, child)).handed_back;
  }
  return collected;
}

function stopDetached(dc: DelegationDeps, parent: RunRecord, childIds: string[]): Promise<number> {
  return stopRuns(dc, childIds, `parent_withdrew:${parent.run_id}`, 'parent_withdrew');
}

/** The delegation link `run` may message along, or the failed envelope saying why not. */
async function receiverOf(
  dc: DelegationDeps,
  run: RunRecord,
  op: Operation,
  args: DelegateMessageArgs,
): Promise<{ to: string; input: unknown; controlId: string } | ToolResultEnvelope> {
  const notLinked = (message: string) =>
    delegationFailedEnvelope(op.op_id, 'permission_denied', 'not_linked', message);
  if (args.child_run_id !== undefined) {
    const child = await dc.store.getRun(args.child_run_id);
    if (child === null || child.parent_run_id !== run.run_id)
      return notLinked(`run ${args.child_run_id} is not a child of this run`);
    return { to: child.run_id, input: args.text, controlId: `delegate_message:${op.op_id}` };
  }
  if (run.parent_run_id === undefined) return notLinked('this run has no parent to post to');
  return {
    to: run.parent_run_id,
    input: { from_child: run.run_id, text: args.text },
    controlId: `child_message:${op.op_id}`,
  };
}

async function sendMessage(dc: DelegationDeps, run: RunRecord, op: Operation): Promise<ToolResultEnvelope> {
  const parsed = toolArgsOf(op, DelegateMessageArgs, 'delegate_message_args_invalid', 'a delegate message');
  if ('failed' in parsed) return parsed.failed;
  const receiver = await receiverOf(dc, run, op, parsed.args);
  if ('envelope' in receiver) return receiver;
  const ack = await dc.applyControl(
    receiver.to,
    { control_id: receiver.controlId, command: 'steer', input: receiver.input },
    DELEGATION_CALLER,
  );
  if (ack.ack === 'rejected') {
    return delegationFailedEnvelope(
      op.op_id,
      'conflict',
      ack.reason,
      `the message to run ${receiver.to} was rejected: ${ack.reason}`,
    );
  }
  dc.log({ level: 'info', message: 'delegate message sent', run_id: run.run_id, child_run_id: receiver.to });
  return messageSentEnvelope(op.op_id, receiver.to, ack);
}

/** What delegation runs over: the engine's deps and the hooks it is given. */
type DelegationDeps = EngineDeps & DelegationHooks;

/** Delegation over `deps`; `hooks.applyControl` stops children. */
export function createDelegation(deps: EngineDeps, hooks: DelegationHooks): Delegation {
  const dc: DelegationDeps = { ...deps, applyControl: hooks.applyControl };
  return {
    startChild: (parent, op) => startChild(dc, parent, op),
    sendMessage: (run, op) => sendMessage(dc, run, op),
    settleEnded: (record) => settleEnded(dc, record),
    collectEnded: (parent) => collectEnded(dc, parent),
    stopDetached: (parent, childIds) => stopDetached(dc, parent, childIds),
  };
}
