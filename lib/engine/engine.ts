/**
 * The engine: the use cases over the ports, wired into one object. Each use case is a module of
 * its own over the same deps (deps.ts): create-run, controls (controls, delivered results),
 * step-worker (the step), sweep, reads, delegation. Every change to a run goes through
 * `commitRun` (one store commit); the run rules are core's. docs/architecture.md, "The commit",
 * "The step", "The sweeper"; docs/contracts/run-lifecycle.md, "Controls".
 */
import type {
  ControlAck,
  Principal,
  PublishResult,
  RegistryEntryView,
  RegistryKind,
  RegistryListing,
  RunEvent,
  RunRecord,
} from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import * as clientDriven from './client-driven.ts';
import { applyControl } from './controls.ts';
import { type CreateRunOutput, createRun } from './create-run.ts';
import { createDelegation } from './delegation.ts';
import { type DeliveryAck, deliverResult } from './deliveries.ts';
import { type EngineContext, type EngineOptions, resolveDeps } from './deps.ts';
import { forkRun } from './fork.ts';
import type { CheckpointItem } from './ports.ts';
import {
  type ChildRunSummary,
  createReads,
  type EventPage,
  type EventQuery,
  type RunListing,
  type RunListQuery,
} from './reads.ts';
import { createRecordCache } from './record-cache.ts';
import { getEntry, listEntries, publishEntry } from './registries.ts';
import { readRunAt } from './run-at.ts';
import { readState, type StateRevision } from './state-reads.ts';
import { type StepOutcome, stepRun } from './step-worker.ts';
import { type SweepReport, sweep } from './sweep.ts';
import { type PredecessorReport, recoverPredecessors } from './take-lease.ts';
import type { RunAtSeq } from './upgrade/run-at.ts';

export type { ClientWriteResult, LeaseView } from './client-driven.ts';
export type { CreateRunOutput } from './create-run.ts';
export type { DeliveryAck } from './deliveries.ts';
export type { CrashPoint, EngineOptions } from './deps.ts';
export { needsStep } from './deps.ts';
export type { ChildRunSummary, EventPage, EventQuery, RunListing, RunListQuery } from './reads.ts';
export { runView } from './reads.ts';
export type { StateRevision } from './state-reads.ts';
export type { StepOutcome } from './step-worker.ts';
export { emptySweepReport, type SweepReport } from './sweep.ts';
export type { PredecessorReport } from './take-lease.ts';
export type { RunAtSeq } from './upgrade/run-at.ts';

export interface Engine {
  createRun(input: unknown, caller: Caller): Promise<CreateRunOutput>;
  getRun(runId: string, caller: Caller): Promise<RunRecord>;
  /** Events with seq > after, up to limit (no wait). */
  readEvents(runId: string, caller: Caller, after: number, limit: number): Promise<RunEvent[]>;
  /** A page of events with where the run stands; long-polls up to `query.waitMs`. */
  eventPage(runId: string, caller: Caller, query: EventQuery): Promise<EventPage>;
  /** Runs the caller may read: by status (newest first, paged) or a subject's live run. */
  listRuns(query: RunListQuery, caller: Caller): Promise<RunListing>;
  listCheckpoints(runId: string, caller: Caller): Promise<CheckpointItem[]>;
  getCheckpoint(runId: string, caller: Caller, n: number): Promise<CheckpointItem>;
  /** The child runs `runId` delegated to, oldest first. */
  listChildren(runId: string, caller: Caller): Promise<ChildRunSummary[]>;
  /** Revision `rev` (default: the current) of the run's domain state (write-once). */
  getState(runId: string, caller: Caller, rev?: number): Promise<StateRevision>;
  /** The run as it stood at `seq`: summary, state, projection, open requests (run-at.ts). */
  getRunAt(runId: string, caller: Caller, seq: number): Promise<RunAtSeq>;
  /** Creates a run from checkpoint `n` of `runId` (body: ForkRunInput), owned by the caller. */
  forkRun(runId: string, input: unknown, caller: Caller): Promise<CreateRunOutput>;
  applyControl(runId: string, control: unknown, caller: Caller): Promise<ControlAck>;
  /** Delivers an external result by resume_key; `deliveryId` makes a repeat a duplicate. */
  deliverResult(
    resumeKey: string,
    result: unknown,
    caller: Caller,
    deliveryId?: string,
  ): Promise<DeliveryAck>;
  stepRun(runId: string): Promise<StepOutcome>;
  /** Client-driven runs: the lease, operations, requests and ending a client drives (client-driven.ts). */
  client: ClientDrivenUseCases;
  sweep(shards?: number[]): Promise<SweepReport>;
  /**
   * A slotted worker's start (EngineOptions.workerSlot): takes over at once the runs an earlier
   * process of its slot still holds, and sends their step messages (take-lease.ts). Without a
   * slot: nothing ({examined: 0, taken_over: 0}).
   */
  recoverPredecessors(): Promise<PredecessorReport>;
  /** Registries (admin: the caller checks the rights). See registries.ts. */
  publishEntry(kind: RegistryKind, document: unknown, publisher: Principal): Promise<PublishResult>;
  listEntries(kind: RegistryKind): Promise<RegistryListing>;
  getEntry(kind: RegistryKind, name: string, version?: string): Promise<RegistryEntryView>;
}

/** The client-driven use cases, each `(runId, body, caller)` (client-driven.ts documents them). */
export interface ClientDrivenUseCases {
  takeLease(runId: string, body: unknown, caller: Caller): ReturnType<typeof clientDriven.takeLease>;
  releaseLease(runId: string, body: unknown, caller: Caller): ReturnType<typeof clientDriven.releaseLease>;
  beginOperation(
    runId: string,
    body: unknown,
    caller: Caller,
  ): ReturnType<typeof clientDriven.beginOperation>;
  reportOutcome(runId: string, body: unknown, caller: Caller): ReturnType<typeof clientDriven.reportOutcome>;
  openRequest(runId: string, body: unknown, caller: Caller): ReturnType<typeof clientDriven.openRequest>;
  takeSteers(runId: string, body: unknown, caller: Caller): ReturnType<typeof clientDriven.takeSteers>;
  completeRun(runId: string, body: unknown, caller: Caller): ReturnType<typeof clientDriven.completeRun>;
  failRun(runId: string, body: unknown, caller: Caller): ReturnType<typeof clientDriven.failRun>;
  inspectLease(runId: string, caller: Caller): ReturnType<typeof clientDriven.inspectLease>;
}

/**
 * Wires the use cases over `options`' ports (EngineOptions: store, queue, clock, reducers,
 * tools, models, and optional limits). Does no I/O and never throws; each use case throws
 * EngineError with the API's codes (errors.ts). lib/runtime.ts `createRuntime` wires the deployed
 * adapters (DynamoDB, SQS, S3) the same way. docs/architecture.md, "Code map", "The commit".
 *
 * @example
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { createEngine } from './lib/engine/engine.ts';
 * import { createBedrockModel, createModelHost } from './lib/models/index.ts';
 * import { createSqsStepQueue } from './lib/queue/step-queue.ts';
 * import { AGENT_LOOP_PATH } from './lib/reducers/index.ts';
 * import { builtInFunctions } from './lib/runtime.ts';
 * import { createLazyReducerHost } from './lib/sandbox/lazy-host.ts';
 * import { createMemoryRunStore } from './lib/store/memory-run-store.ts';
 * import { createAuditLog, createPolicyGate, createToolHost, createToolRegistry } from './lib/tools/index.ts';
 *
 * const engine = createEngine({
 *   store: createMemoryRunStore(), // a deployment: createDynamoRunStore
 *   queue: createSqsStepQueue(new SQSClient({}), 'https://sqs.us-east-1.amazonaws.com/123456789012/steps'),
 *   clock: { now: () => Date.now() },
 *   reducers: createLazyReducerHost({ registry: builtInFunctions() }),
 *   tools: createToolHost({
 *     registry: createToolRegistry(),
 *     gate: createPolicyGate(),
 *     audit: createAuditLog((event) => console.log(event)),
 *   }),
 *   models: createModelHost({
 *     functions: { '/lib/models/bedrock': createBedrockModel({ modelId: 'amazon.nova-lite-v1:0' }) },
 *     default: '/lib/models/bedrock',
 *   }),
 * });
 * const alice = { principal: { kind: 'user' as const, id: 'alice' } };
 * const subject = { workspace: 'demo', path: '/notes' };
 * const { run } = await engine.createRun({ subject, reducer: { function_path: AGENT_LOOP_PATH } }, alice);
 * // What a step worker does with each step message: advance the run, one commit per operation.
 * const outcome = await engine.stepRun(run.run_id);
 */
export function createEngine(options: EngineOptions): Engine {
  const deps = resolveDeps(options);
  const ctx: EngineContext = {
    ...deps,
    records: createRecordCache(),
    delegation: createDelegation(deps, {
      applyControl: (runId, control, caller) => applyControl(ctx, runId, control, caller),
    }),
  };
  const reads = createReads(deps);
  return {
    createRun: (input, caller) => createRun(deps, input, caller),
    getRun: reads.getRun,
    readEvents: async (runId, caller, after, limit) =>
      (await reads.readEvents(runId, caller, { after, limit })).events,
    eventPage: reads.readEvents,
    listRuns: reads.listRuns,
    listCheckpoints: reads.listCheckpoints,
    getCheckpoint: reads.getCheckpoint,
    listChildren: reads.listChildren,
    getState: (runId, caller, rev) => readState(deps, runId, caller, rev),
    getRunAt: (runId, caller, seq) => readRunAt(deps, runId, caller, seq),
    forkRun: (runId, input, caller) => forkRun(deps, runId, input, caller),
    applyControl: (runId, control, caller) => applyControl(ctx, runId, control, caller),
    deliverResult: (resumeKey, result, caller, deliveryId) =>
      deliverResult(ctx, resumeKey, result, caller, deliveryId),
    stepRun: (runId) => stepRun(ctx, runId),
    sweep: (shards) => sweep(ctx, shards),
    recoverPredecessors: () => recoverPredecessors(ctx),
    publishEntry: (kind, document, publisher) => publishEntry(deps, kind, document, publisher),
    listEntries: (kind) => listEntries(deps, kind),
    getEntry: (kind, name, version) => getEntry(deps, kind, name, version),
    client: {
      takeLease: (runId, body, caller) => clientDriven.takeLease(ctx, runId, body, caller),
      releaseLease: (runId, body, caller) => clientDriven.releaseLease(ctx, runId, body, caller),
      beginOperation: (runId, body, caller) => clientDriven.beginOperation(ctx, runId, body, caller),
      reportOutcome: (runId, body, caller) => clientDriven.reportOutcome(ctx, runId, body, caller),
      openRequest: (runId, body, caller) => clientDriven.openRequest(ctx, runId, body, caller),
      takeSteers: (runId, body, caller) => clientDriven.takeSteers(ctx, runId, body, caller),
      completeRun: (runId, body, caller) => clientDriven.completeRun(ctx, runId, body, caller),
      failRun: (runId, body, caller) => clientDriven.failRun(ctx, runId, body, caller),
      inspectLease: (runId, caller) => clientDriven.inspectLease(ctx, runId, caller),
    },
  };
}
