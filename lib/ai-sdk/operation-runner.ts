/**
 * The operations of one durable agent run, one at a time in the order the agent asks for them:
 * each is answered from the journal when the run recorded it, else begun, executed and reported
 * on the live session (its result committed before the agent sees it). A replayed tool call is
 * matched to its recorded operation by the model's call id (operation_started.data.call_id),
 * else by position. The AI SDK runs a step's tools in parallel; here they queue, so the run's op
 * order is the order the agent called them in. A tool call's approval waits in the same queue
 * (no operation begins while a request is open). docs/contracts/run-lifecycle.md, "Operations",
 * "Leases, recovery and the sweeper", "Controls" (approve).
 */
import type { AgentRunsClient, DriveSession } from '../client/index.ts';
import { type ApprovalSubject, ClientOperationResult, type ToolResultEnvelope } from '../contracts/index.ts';
import { DurableAgentError } from './errors.ts';
import type {
  ApprovalDecision,
  Journal,
  RecordedApproval,
  RecordedOperation,
  RecordedResult,
} from './journal.ts';

/** What the agent asks to run: the operation's kind, the tool's name for a tool call, and its begin body. */
export interface OperationSpec {
  kind: 'model_turn' | 'tool_call';
  tool?: string;
  begin: Record<string, unknown> & { kind: string };
}

/** How an operation ended, as the adapter saw it: the recorded result and whether it came from the journal. */
export interface Performed {
  result: RecordedResult;
  replayed: boolean;
  /** A model turn's steers (inputs, oldest first): recorded before it, or taken for it now. */
  steers: readonly unknown[];
}

/** A tool call that needs an approval: the tool, the model's call id and the subject to approve. */
export interface ApprovalAsk {
  tool: string;
  callId: string;
  subject: ApprovalSubject;
}

/** How long one long-poll for an approval's decision waits (seconds) before the session is checked again. */
const DECISION_POLL_SECONDS = 2;

/** The call id a tool call's begin names, if any. */
const callIdOf = (spec: OperationSpec) =>
  spec.kind === 'tool_call' ? (spec.begin.request as { call_id?: string } | undefined)?.call_id : undefined;

/** An operation as a message names it: its kind, its tool and its call id. */
const describe = (kind: string, tool: string | undefined, callId: string | undefined) =>
  `${kind}${tool ? ` ${tool}` : ''}${callId ? ` (call ${callId})` : ''}`;

/** The work of a live operation: given its abort signal and its steers, what to report. */
export type OperationWork = (
  signal: AbortSignal,
  steers: readonly unknown[],
) => Promise<ClientOperationResult>;

/** The result a live report records, in the shape the journal reads it back. */
function recordedOf(report: ClientOperationResult, spec: OperationSpec): RecordedResult {
  switch (report.kind) {
    case 'model_turn_completed': {
      const { kind, message, ...data } = report;
      return { kind, data: { ...data, message: { text: message.text ?? null } } };
    }
    case 'tool_result': {
      const call_id = (spec.begin.request as { call_id?: string } | undefined)?.call_id;
      const envelope = report.envelope as ToolResultEnvelope;
      return {
        kind: report.kind,
        data: { tool: spec.tool ?? '', envelope, ...(call_id ? { call_id } : {}) },
      };
    }
    case 'operation_failed': {
      const { kind, usage: _usage, ...data } = report;
      return { kind, data };
    }
    case 'operation_cancelled':
      return { kind: report.kind, data: { acknowledged: report.acknowledged } };
  }
}

/**
 * Runs a durable agent's operations over `journal` and, when the run is live, `session` (null
 * when the run already ended: only recorded operations can be answered then).
 */
export class OperationRunner {
  readonly #journal: Journal;
  readonly #session: DriveSession | null;
  readonly #runId: string;
  readonly #client: AgentRunsClient;
  /** The journal's operations and approvals already matched to a call of the agent. */
  readonly #usedOps = new Set<RecordedOperation>();
  readonly #usedApprovals = new Set<RecordedApproval>();
  /** Operations performed beyond the journal. */
  #beyond = 0;
  #queue: Promise<unknown> = Promise.resolve();
  #halted: DurableAgentError | null = null;
  /** Model calls answered from the journal, tool calls answered from the journal. */
  readonly replayed = { model_turns: 0, tool_calls: 0 };

  constructor(client: AgentRunsClient, runId: string, journal: Journal, session: DriveSession | null) {
    this.#client = client;
    this.#runId = runId;
    this.#journal = journal;
    this.#session = session;
  }

  /** The error that stopped the run for this process (a budget, a stop), or null. */
  get halted(): DurableAgentError | null {
    return this.#halted;
  }

  /**
   * Performs the next operation: from the journal when the run recorded it (a replay; its kind
   * and tool must match, else DurableAgentError `replay_mismatch`), else live. A model turn gets
   * its steers: those recorded before it, or the queued ones taken now. Throws DurableAgentError
   * `budget_exceeded` (the run paused or failed instead of beginning it), `run_stopped`,
   * `run_terminal` (the run ended and never recorded this operation), and ApiError of a write.
   */
  perform(spec: OperationSpec, work: OperationWork): Promise<Performed> {
    const next = this.#queue.then(() => this.#performNow(spec, work));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #performNow(spec: OperationSpec, work: OperationWork): Promise<Performed> {
    if (this.#halted !== null) throw this.#halted;
    const recorded = this.#recordedFor(spec);
    if (recorded !== undefined) {
      this.#check(recorded, spec);
      if (recorded.result !== null) {
        this.replayed[spec.kind === 'model_turn' ? 'model_turns' : 'tool_calls'] += 1;
        return { result: recorded.result, replayed: true, steers: recorded.steersBefore };
      }
    }
    if (recorded !== undefined)
      // Begun again as it was: with the steers it had, none newer (they wait for the next turn).
      return { ...(await this.#live(spec, work, recorded.steersBefore, false)), replayed: false };
    // Steers taken by a process that died before its next operation are this turn's too.
    this.#beyond += 1;
    const steers = this.#beyond === 1 ? this.#journal.steersAfter : [];
    return { ...(await this.#live(spec, work, steers, true)), replayed: false };
  }

  /** The recorded operation a call of the agent is: the one with its call id, else the next one not yet matched. */
  #recordedFor(spec: OperationSpec): RecordedOperation | undefined {
    const callId = callIdOf(spec);
    const free = this.#journal.operations.filter((o) => !this.#usedOps.has(o));
    const recorded = (callId !== undefined ? free.find((o) => o.callId === callId) : undefined) ?? free[0];
    if (recorded !== undefined) this.#usedOps.add(recorded);
    return recorded;
  }

  #check(recorded: RecordedOperation, spec: OperationSpec): void {
    const callId = callIdOf(spec);
    const sameCall = recorded.callId === undefined || callId === undefined || recorded.callId === callId;
    const sameKind =
      recorded.kind === spec.kind && (spec.kind !== 'tool_call' || recorded.tool === spec.tool);
    if (sameKind && sameCall) return;
    throw this.#halt(
      new DurableAgentError(
        'replay_mismatch',
        `${recorded.opId} was recorded as ${describe(recorded.kind, recorded.tool, recorded.callId)}, but the agent asked for ${describe(spec.kind, spec.tool, callIdOf(spec))}`,
        { runId: this.#runId, op_id: recorded.opId },
      ),
    );
  }

  /**
   * Waits for the approval of a tool call, in the queue with the operations: the decision the
   * run recorded (a replay), else the open request the run holds for that call (a restart while
   * it waited: no second request), else a new request opened now. Resolves with the decision
   * (`rejected` and `closed`, expired, mean the tool must not run). Throws DurableAgentError
   * `run_stopped` (the run stopped or ended, or the lease was lost, while waiting), `run_terminal` (the run ended without
   * a decision), `replay_mismatch` (the run recorded the approval of another tool here), and
   * ApiError of a write.
   */
  approval(ask: ApprovalAsk): Promise<ApprovalDecision> {
    const next = this.#queue.then(() => this.#approvalNow(ask));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #approvalNow(ask: ApprovalAsk): Promise<ApprovalDecision> {
    if (this.#halted !== null) throw this.#halted;
    const free = this.#journal.approvals.filter((a) => !this.#usedApprovals.has(a));
    const recorded = free.find((a) => a.callId === ask.callId) ?? free.find((a) => a.callId === undefined);
    if (recorded !== undefined) {
      this.#usedApprovals.add(recorded);
      if (recorded.tool !== ask.tool)
        throw this.#halt(
          new DurableAgentError(
            'replay_mismatch',
            `${recorded.requestId} approves ${recorded.tool}, but the agent asked to approve ${ask.tool}`,
            { runId: this.#runId, request_id: recorded.requestId },
          ),
        );
      if (recorded.decision !== null) return recorded.decision;
    } else if (this.#journal.operations.some((o) => o.callId === ask.callId && !this.#usedOps.has(o))) {
      // The run recorded the call itself without an approval (it needed none then): replay it as it ran.
      return { decision: 'approved', reason: undefined };
    }
    const session = this.#session;
    if (session === null)
      throw new DurableAgentError('run_terminal', 'the run ended before this approval was decided', {
        runId: this.#runId,
      });
    if (session.signal.aborted) throw this.#halt(this.#stopped(session));
    const requestId = recorded?.requestId ?? (await session.approval(ask.subject));
    // The decision comes after the request was opened: after what the journal held, or this write.
    const after = recorded !== undefined ? this.#journal.lastSeq : session.run.last_seq;
    return this.#decisionOf(session, requestId, after);
  }

  /** Long-polls the run's events after `after` for the decision on `requestId`. */
  async #decisionOf(session: DriveSession, requestId: string, after: number): Promise<ApprovalDecision> {
    let cursor = after;
    for (;;) {
      if (session.signal.aborted) throw this.#halt(this.#stopped(session));
      const page = await this.#client.events(this.#runId, {
        after: cursor,
        limit: 1000,
        wait: DECISION_POLL_SECONDS,
      });
      for (const event of page.events) {
        if (event.data.request_id !== requestId) continue;
        if (event.kind === 'request_resolved')
          return {
            decision: event.data.decision === 'rejected' ? 'rejected' : 'approved',
            reason: typeof event.data.reason === 'string' ? event.data.reason : undefined,
          };
        if (event.kind !== 'request_closed') continue;
        const reason = typeof event.data.reason === 'string' ? event.data.reason : undefined;
        if (reason === 'expired') return { decision: 'closed', reason };
        // Closed because the run stopped or ended: nothing more is begun.
        throw this.#halt(
          new DurableAgentError('run_stopped', `the run ended (${reason}) while a tool waited for approval`, {
            runId: this.#runId,
            request_id: requestId,
          }),
        );
      }
      cursor = Math.max(cursor, page.next_after);
    }
  }

  async #live(
    spec: OperationSpec,
    work: OperationWork,
    recordedSteers: readonly unknown[],
    takeQueued: boolean,
  ): Promise<{ result: RecordedResult; steers: readonly unknown[] }> {
    const session = this.#session;
    if (session === null)
      throw new DurableAgentError('run_terminal', 'the run ended before recording this operation', {
        runId: this.#runId,
      });
    if (session.signal.aborted) throw this.#halt(this.#stopped(session));
    const queued = spec.kind === 'model_turn' && takeQueued ? await session.steers() : [];
    const steers = spec.kind === 'model_turn' ? [...recordedSteers, ...queued] : [];
    // work reports its own failures; a throw is an abort (drive reports operation_cancelled).
    const report = await session.operation(spec.begin, async (signal) => ({
      result: await work(signal, steers),
    }));
    if (report === null) {
      throw this.#halt(
        new DurableAgentError(
          'budget_exceeded',
          `a budget of the run was reached; the run is ${session.run.status}`,
          {
            runId: this.#runId,
            status: session.run.status,
            budgets: session.run.budgets,
            usage: session.run.usage,
          },
        ),
      );
    }
    const result = ClientOperationResult.parse((report as { result: unknown }).result);
    if (result.kind === 'operation_cancelled') throw this.#halt(this.#stopped(session));
    return { result: recordedOf(result, spec), steers };
  }

  #stopped(session: DriveSession): DurableAgentError {
    return new DurableAgentError('run_stopped', `the run is ${session.run.status} or its lease was lost`, {
      runId: this.#runId,
      status: session.run.status,
    });
  }

  #halt(error: DurableAgentError): DurableAgentError {
    this.#halted ??= error;
    return error;
  }
}
