/**
 * The operations of one durable agent run, one at a time in the order the agent asks for them:
 * each is answered from the journal when the run recorded it, else begun, executed and reported
 * on the live session (its result committed before the agent sees it). The AI SDK runs a step's
 * tools in parallel; here they queue, so the run's op order is the order the agent called them
 * in, the same on every replay. Seed: agent-runs, "Operations", "Leases, recovery and the sweeper".
 */
import type { DriveSession } from '../client/index.ts';
import { ClientOperationResult, type ToolResultEnvelope } from '../contracts/index.ts';
import { DurableAgentError } from './errors.ts';
import type { Journal, RecordedOperation, RecordedResult } from './journal.ts';

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
  #cursor = 0;
  #queue: Promise<unknown> = Promise.resolve();
  #halted: DurableAgentError | null = null;
  /** Model calls answered from the journal, tool calls answered from the journal. */
  readonly replayed = { model_turns: 0, tool_calls: 0 };

  constructor(runId: string, journal: Journal, session: DriveSession | null) {
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
    const recorded = this.#journal.operations[this.#cursor];
    this.#cursor += 1;
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
    const first = this.#cursor === this.#journal.operations.length + 1;
    const steers = first ? this.#journal.steersAfter : [];
    return { ...(await this.#live(spec, work, steers, true)), replayed: false };
  }

  #check(recorded: RecordedOperation, spec: OperationSpec): void {
    if (recorded.kind === spec.kind && (spec.kind !== 'tool_call' || recorded.tool === spec.tool)) return;
    throw this.#halt(
      new DurableAgentError(
        'replay_mismatch',
        `${recorded.opId} was recorded as ${recorded.kind}${recorded.tool ? ` ${recorded.tool}` : ''}, but the agent asked for ${spec.kind}${spec.tool ? ` ${spec.tool}` : ''}`,
        { runId: this.#runId, op_id: recorded.opId },
      ),
    );
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
