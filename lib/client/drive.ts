/**
 * `drive`: an external agent loop drives a client-driven run. It takes the lease, renews it in
 * the background (each renewal re-reads the run: a stop shows as `cancelling`, a steer that
 * interrupts as `interrupt_requested`), runs each operation with an AbortSignal that fires on
 * either, reports its outcome, and lets the lease go at the end. A lost lease (another client
 * took over, the run was stopped between operations or paused) aborts everything: the loop sees
 * `session.signal.aborted`, and every later write is ApiError `fenced_out`. Browser-safe.
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases", "Controls".
 */
import type {
  ApprovalSubject,
  ClientOperationResult,
  Fence,
  Operation,
  PublicRunRecord,
} from '../contracts/index.ts';
import { operationMustEnd } from '../core/operation-end.ts';
import type { AgentRunsClient } from './client.ts';
import { ApiError } from './errors.ts';

/** How an operation ended, as the work function reports it. */
export type OperationReport =
  | { result: ClientOperationResult | Record<string, unknown> }
  /** An agent.external-runtime.turn-outcome.v1 document; its turn/ref is the op_id. */
  | { turn_outcome: Record<string, unknown> };

/** How `drive` holds the lease: the owner name, its length and how often it is renewed. */
export interface DriveOptions {
  /** The lease owner name (default `client-{uuid}`). */
  owner?: string;
  /** Lease length asked for (ms, default 30 000). */
  ttlMs?: number;
  /** How often the lease is renewed (ms, default a third of ttlMs). */
  renewEveryMs?: number;
}

/**
 * What the loop of `drive` is given: the run, the fence, a signal that aborts when the lease is
 * lost or the run stops, and the fenced writes (operations, steers, questions, the end). Each
 * write throws ApiError (`fenced_out` once the lease was lost).
 */
export interface DriveSession {
  /** The run being driven. */
  readonly runId: string;
  /** The fence every write carries. */
  readonly fence: Fence;
  /** The run as the last answer showed it. */
  readonly run: PublicRunRecord;
  /** Aborts once the lease is lost or the run stops. */
  readonly signal: AbortSignal;
  /**
   * Begins an operation and runs `work` with a signal that fires when the run is stopped (an
   * interruptible operation) or the lease is lost; reports what `work` returns (a throw after the
   * signal fired is reported `operation_cancelled`, any other throw `operation_failed`
   * client_error). Returns the operation's outcome as reported, or null when a budget paused or
   * failed the run instead of starting it.
   */
  operation(
    request: Record<string, unknown> & { kind: string },
    work: (signal: AbortSignal, operation: Operation) => Promise<OperationReport>,
  ): Promise<OperationReport | null>;
  /** Takes the queued steers (their inputs, oldest first; none → []). */
  steers(): Promise<unknown[]>;
  /** Opens a question; returns its request_id. */
  ask(question: string, options?: { choices?: string[] }): Promise<string>;
  /**
   * Opens an approval of `subject` between operations (no operation begins until it is
   * decided: the `approve` control, from the console, `agent-runs approve` or `watch`); returns
   * its request_id. `expires_in_ms`: it closes `expired` unanswered after that long.
   */
  approval(subject: ApprovalSubject, options?: { expires_in_ms?: number }): Promise<string>;
  /** Ends the run `completed` (outcome default `succeeded`); returns the ended run. */
  complete(summary?: string, outcome?: 'succeeded' | 'partial' | 'blocked'): Promise<PublicRunRecord>;
  /** Ends the run `failed` with the error `code`; returns the ended run. */
  fail(code: string): Promise<PublicRunRecord>;
}

/** The run's state after `drive` returned. */
export interface DriveResult<T> {
  /** What the loop returned (undefined when it did not return). */
  value: T | undefined;
  /** The run as last seen. */
  run: PublicRunRecord;
  /** Why the loop ended: it returned, the lease was lost, or the run stopped. */
  ended: 'returned' | 'lease_lost' | 'stopped';
}

const live = (run: PublicRunRecord) => run.status === 'running' || run.status === 'cancelling';

/** The report of one operation's work: its own, or what its throw means (cancelled when aborted). */
async function reportOf<Op>(
  work: (signal: AbortSignal, op: Op) => Promise<OperationReport>,
  signal: AbortSignal,
  op: Op,
): Promise<OperationReport> {
  try {
    return await work(signal, op);
  } catch (err) {
    if (signal.aborted) return { result: { kind: 'operation_cancelled' } };
    return {
      result: {
        kind: 'operation_failed',
        error_class: 'client_error',
        retryable: false,
        message: String(err),
      },
    };
  }
}

/** Runs `beat` every `ms`, one at a time; `stop` ends the beats and waits for the one under way. */
function renewEvery(ms: number, beat: () => Promise<void>): { stop(): Promise<void> } {
  let running = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(beat);
  }, ms);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * Drives `runId` with `loop`. Returns when the loop returns (the lease is then released unless
 * the run ended) or when the lease was lost. Throws what the first lease take throws
 * (lease_held, not_client_driven, run_terminal, ...) and what `loop` throws (after letting the
 * lease go).
 */
export async function drive<T>(
  client: AgentRunsClient,
  runId: string,
  loop: (session: DriveSession) => Promise<T>,
  options: DriveOptions = {},
): Promise<DriveResult<T>> {
  const owner = options.owner ?? `client-${globalThis.crypto.randomUUID()}`;
  const ttl = options.ttlMs ?? 30_000;
  const taken = await client.takeLease(runId, { owner, ttl_ms: ttl });
  const fence: Fence = { owner, epoch: taken.lease.epoch };
  let run = taken.run;
  const session = new AbortController();
  let operation: AbortController | null = null;
  let ended: DriveResult<T>['ended'] = 'returned';

  const seen = (next: PublicRunRecord) => {
    run = next;
    const end = operationMustEnd(next);
    if (end !== null) operation?.abort(new Error(end === 'interrupt' ? 'interrupted' : 'stopped'));
    if (!live(next)) {
      ended = next.status === 'stopped' ? 'stopped' : ended;
      session.abort(new Error(`the run is ${next.status}`));
    }
  };
  const lost = (err: unknown) => {
    if (err instanceof ApiError && (err.code === 'fenced_out' || err.code === 'run_terminal')) {
      ended = (err.details as { status?: string }).status === 'stopped' ? 'stopped' : 'lease_lost';
      operation?.abort(err);
      session.abort(err);
      return true;
    }
    return false;
  };
  const renewal = renewEvery(options.renewEveryMs ?? Math.floor(ttl / 3), async () => {
    if (session.signal.aborted) return;
    try {
      seen((await client.takeLease(runId, { owner, epoch: fence.epoch, ttl_ms: ttl })).run);
    } catch (err) {
      lost(err); // anything else (a network error): the next beat tries again
    }
  });
  /** A fenced write: a lost lease ends the session; the run it answers with is seen. */
  const write = async <R extends { run: PublicRunRecord }>(fn: () => Promise<R>): Promise<R> => {
    try {
      const out = await fn();
      seen(out.run);
      return out;
    } catch (err) {
      lost(err);
      throw err;
    }
  };

  const api: DriveSession = {
    runId,
    fence,
    get run() {
      return run;
    },
    signal: session.signal,
    async operation(request, work) {
      const begun = await write(() => client.beginOperation(runId, { ...request, fence }));
      const op = begun.operation;
      if (op === null) return null;
      operation = new AbortController();
      const signal = AbortSignal.any([operation.signal, session.signal]);
      let report: OperationReport;
      try {
        report = await reportOf(work, signal, op);
      } finally {
        operation = null;
      }
      await write(() =>
        client.reportOperationOutcome(runId, { fence, op_id: op.op_id, ...report } as Parameters<
          AgentRunsClient['reportOperationOutcome']
        >[1]),
      );
      return report;
    },
    async steers() {
      if (run.queued_steers.length === 0) return [];
      const out = await write(() => client.takeSteers(runId, fence));
      return out.steers.map((s) => s.input);
    },
    async ask(question, opts = {}) {
      const out = await write(() => client.openRequest(runId, fence, { kind: 'input', question, ...opts }));
      return out.request_id;
    },
    async approval(subject, opts = {}) {
      const out = await write(() => client.openRequest(runId, fence, { kind: 'approval', subject, ...opts }));
      return out.request_id;
    },
    async complete(summary, outcome = 'succeeded') {
      const body = { outcome, ...(summary !== undefined ? { summary } : {}) };
      return (await write(() => client.completeRun(runId, fence, body))).run;
    },
    async fail(code) {
      return (await write(() => client.failRun(runId, fence, code))).run;
    },
  };

  let value: T | undefined;
  let failure: { error: unknown } | null = null;
  try {
    value = await loop(api);
  } catch (error) {
    failure = { error };
  }
  await renewal.stop();
  if (!session.signal.aborted && run.status === 'running') {
    try {
      run = (await client.releaseLease(runId, fence)).run;
    } catch (err) {
      if (!lost(err) && failure === null) failure = { error: err };
    }
  }
  if (failure !== null) throw failure.error;
  return { value, run, ended };
}
