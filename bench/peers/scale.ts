/**
 * Scale of our runtime on one machine (issue 19, "Scale on one machine"): the engine over
 * DynamoDB Local (in memory) + fauxqs, with the step handler behind the local poller (4 batches
 * of up to 10 at once, as the local stack runs it), and:
 * - `waiting` live runs parked on a question to a person (ask_user): some without an expiry
 *   (absent from the sweep index), some expiring in 2 h (indexed, not due), some in 30 min (the
 *   ones a pass made 31 min later finds due);
 * - an idle window: DynamoDB requests while only waiting runs exist and no sweep runs (must be 0);
 * - steps per second with 1, 10, 100, 500 runs running at once (each a chain of instant tool
 *   calls), and the requests that named a waiting run meanwhile (must be 0);
 * - one sweeper pass with nothing due, and one whose clock is 31 min ahead: reads, writes and
 *   time per due run and per idle run, and how the due runs spread over the sweep shards.
 * Every DynamoDB request is audited: the run partitions (`RUN#{id}`) it names are counted.
 */
import { randomUUID } from 'node:crypto';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { createS3BlobStore } from '../../lib/blobs/blob-store.ts';
import type { ReducerBinding, ToolResultEnvelope } from '../../lib/contracts/index.ts';
import { sha256Hex } from '../../lib/core/canonical.ts';
import { createEngine, type Engine } from '../../lib/engine/engine.ts';
import {
  type ModelHost,
  type ReducerHost,
  type StoreMetrics,
  SWEEP_SHARDS,
  type ToolHost,
} from '../../lib/engine/ports.ts';
import { createCountingMetrics, SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createStepBatchHandler } from '../../lib/handlers/step-batch.ts';
import { startPoller } from '../../lib/local/poller.ts';
import { ensureResources } from '../../lib/local/resources.ts';
import { startLocalServices } from '../../lib/local/services.ts';
import { createSqsStepQueue } from '../../lib/queue/step-queue.ts';
import { createDynamoRunStore } from '../../lib/store/dynamo-run-store.ts';
import { shardOf } from '../../lib/store/table.ts';
import { respond, unchanged } from '../../test/support/reducers.ts';
import { load } from './workload.ts';

export interface ScaleOptions {
  /** Waiting runs: [no expiry, expiring in 2 h, expiring in 30 min (due in the late pass)]. */
  waiting: [number, number, number];
  /** Running runs at once, one level after the other. */
  levels: number[];
  /** Total tool calls per level at least; each run makes max(minSteps, ceil(stepsPerLevel / level)). */
  stepsPerLevel: number;
  minSteps: number;
  idleWindowMs: number;
}

export interface ScaleLevel {
  running: number;
  steps_per_run: number;
  steps: number;
  wall_ms: number;
  steps_per_second: number;
  requests_naming_a_waiting_run: number;
  load: string;
}

export interface SweepCost {
  examined: number;
  acted: number;
  wall_ms: number;
  queries: number;
  get_item: number;
  transact_write_items: number;
  sqs_sends: number;
  requests_naming_an_idle_run: number;
}

export interface ScaleReport {
  waiting_runs: { no_expiry: number; expiring_2h: number; expiring_30min: number };
  idle_window: {
    ms: number;
    dynamodb_requests: number;
    /** Empty long polls of the step pollers (SQS, one per poller per second whatever the number of runs). */
    sqs_empty_receives: number;
    store_metrics_delta: StoreMetrics;
    load: string;
  };
  levels: ScaleLevel[];
  sweep_nothing_due: SweepCost;
  sweep_due: SweepCost & {
    per_due_run: { get_item: number; transact_write_items: number; sqs_sends: number; ms: number };
    /** DynamoDB requests that named an idle (waiting, not due) run, per idle run. */
    per_idle_run: { requests: number };
  };
  shard_spread: {
    shards: number;
    due_per_shard: number[];
    max_over_mean: number;
    /** What the due pass's queries returned per shard (the same runs, seen through the index). */
    candidates_per_shard: number[];
    /** Every waiting run in the sweep index (those with an expiry), per shard. */
    indexed_per_shard: number[];
    indexed_max_over_mean: number;
  };
  load: { before: string; after: string };
}

const MINUTE = 60_000;

/** The waiting runs' reducer: ask a person once (with the input's expiry, if any); complete on the answer or its close. */
function waiter() {
  type Req = {
    state: { seen: number } | null;
    state_rev: number;
    event: { seq: number; kind: string; data: Record<string, unknown> };
  };
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    if (req.event.seq <= (req.state?.seen ?? 0)) return unchanged(req);
    const state = { seen: req.event.seq };
    if (req.event.kind === 'run_started') {
      const expires = (req.event.data.input as { expires_in_ms?: number } | null)?.expires_in_ms;
      return respond(req, state, [
        { kind: 'ask_user', question: 'go on?', ...(expires !== undefined && { expires_in_ms: expires }) },
      ]);
    }
    if (req.event.kind === 'request_resolved' || req.event.kind === 'request_closed')
      return respond(req, state, [{ kind: 'complete', outcome: 'succeeded', summary: 'answered' }]);
    return respond(req, state, []);
  };
}

/** The running runs' reducer: `input.steps` instant tool calls one after the other, then complete. */
function chain() {
  type State = { seen: number; n: number; k: number };
  type Req = {
    state: State | null;
    state_rev: number;
    event: { seq: number; kind: string; data: Record<string, unknown> };
  };
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const st = req.state;
    if (req.event.seq <= (st?.seen ?? 0)) return unchanged(req);
    const call = (n: number) => ({
      kind: 'call_tool',
      tool: 'lookup',
      args: { i: n },
      mutating: false,
      replay_safe: true,
    });
    if (req.event.kind === 'run_started') {
      const k = Number((req.event.data.input as { steps?: number } | null)?.steps ?? 10);
      return respond(req, { seen: req.event.seq, n: 1, k }, [call(1)]);
    }
    if (st !== null && (req.event.kind === 'tool_result' || req.event.kind === 'operation_failed')) {
      if (st.n >= st.k)
        return respond(req, { ...st, seen: req.event.seq }, [
          { kind: 'complete', outcome: 'succeeded', summary: `${st.n} calls` },
        ]);
      return respond(req, { ...st, seen: req.event.seq, n: st.n + 1 }, [call(st.n + 1)]);
    }
    return respond(req, { ...(st ?? { n: 0, k: 0 }), seen: req.event.seq }, []);
  };
}

function reducerHost(fns: Record<string, (r: Record<string, unknown>) => unknown>): ReducerHost {
  return {
    async resolve(binding: ReducerBinding) {
      const fn = fns[binding.function_path];
      return fn === undefined ? null : { artifact_hash: sha256Hex(fn.toString()) };
    },
    async reduce(binding, request) {
      const fn = fns[binding.function_path];
      if (fn === undefined) return { kind: 'unavailable', reason: 'missing' };
      return {
        kind: 'answered',
        response: JSON.parse(JSON.stringify(fn(request as Record<string, unknown>))),
        artifact_hash: sha256Hex(fn.toString()),
      };
    },
  };
}

const instantTool: ToolHost = {
  list: () => [],
  gate: () => ({ decision: 'allow' }),
  async execute(request) {
    const envelope: ToolResultEnvelope = {
      envelope: 'raisin.tool-result/1',
      operation_id: request.op_id,
      status: 'succeeded',
      reads: [],
      writes: [],
      artifact_refs: [],
      evidence: [],
      diagnostics: [],
      suggested_next_actions: [],
      payload: { i: request.args.i },
    };
    return envelope;
  },
};

const noModel: ModelHost = {
  async turn() {
    return { error_class: 'unsupported', message: 'no model in this bench' };
  },
};

const RUN_KEY = /RUN#(run_[0-9a-f]+)/g;

/** Runs the scale bench; starts and stops its own services. */
export async function runScale(o: ScaleOptions): Promise<ScaleReport> {
  const loadBefore = load();
  const services = await startLocalServices();
  try {
    const resources = await ensureResources(services);
    const clients = createAwsClients(services);
    // Every DynamoDB request, with the run partitions it names.
    let requests = 0;
    const named = new Map<string, number>();
    const send = clients.doc.send.bind(clients.doc) as (command: unknown) => Promise<unknown>;
    const doc = new Proxy(clients.doc, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return (command: { input: unknown }) => {
          requests += 1;
          for (const m of JSON.stringify(command.input).matchAll(RUN_KEY)) {
            const id = m[1] ?? '';
            named.set(id, (named.get(id) ?? 0) + 1);
          }
          if (command instanceof TransactWriteCommand) transactions += 1;
          return send(command);
        };
      },
    });
    let transactions = 0;
    const store = createDynamoRunStore({
      doc,
      tableName: resources.tableName,
      blobs: createS3BlobStore(clients.s3, resources.bucketName),
    });
    const candidatesPerShard = Array.from({ length: SWEEP_SHARDS }, () => 0);
    const sweepCandidates = store.sweepCandidates.bind(store);
    const auditedStore = {
      ...store,
      metrics: store.metrics,
      async sweepCandidates(shard: number, now: number, limit: number) {
        const ids = await sweepCandidates(shard, now, limit);
        candidatesPerShard[shard] = (candidatesPerShard[shard] ?? 0) + ids.length;
        return ids;
      },
    };
    // fauxqs names queues http://sqs.{region}.localhost:{port}/..., a host that need not resolve.
    const queueUrl = new URL(new URL(resources.queueUrl).pathname, services.sqsEndpoint).toString();
    const queue = createSqsStepQueue(clients.sqs, queueUrl);
    const engineOn = (clock: { now(): number }): Engine =>
      createEngine({
        store: auditedStore,
        queue,
        clock,
        reducers: reducerHost({ '/scale/wait': waiter(), '/scale/loop': chain() }),
        tools: instantTool,
        models: noModel,
        workerId: 'scale',
      });
    const engine = engineOn({ now: () => Date.now() });
    // Which runs reached rest, observed at the step handler (no extra reads).
    const rested = new Map<string, string>();
    const observed: Engine = {
      ...engine,
      async stepRun(runId) {
        const outcome = await engine.stepRun(runId);
        if (outcome.kind === 'progressed' || outcome.kind === 'nothing_to_do')
          rested.set(runId, outcome.status);
        return outcome;
      },
    };
    let sqsReceives = 0;
    const sqs = new Proxy(clients.sqs, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return (command: { constructor: { name: string } }, ...rest: unknown[]) => {
          if (command.constructor.name === 'ReceiveMessageCommand') sqsReceives += 1;
          return (target.send as (...a: unknown[]) => unknown)(command, ...rest);
        };
      },
    });
    const poller = startPoller({
      sqs,
      queueUrl,
      queueArn: resources.queueArn,
      region: services.region,
      handler: createStepBatchHandler({
        engine: observed,
        logger: SILENT_LOG,
        metrics: createCountingMetrics(),
      }),
      visibilityTimeoutSeconds: 60,
      waitTimeSeconds: 1,
      concurrency: 4,
    });
    const caller = { principal: { kind: 'user' as const, id: 'scale' } };
    const create = async (path: string, input: unknown) =>
      (
        await engine.createRun(
          {
            subject: { workspace: 'scale', path: `/${path}/${randomUUID()}` },
            reducer: { function_path: path === 'wait' ? '/scale/wait' : '/scale/loop' },
            input,
          },
          caller,
        )
      ).run.run_id;
    async function inBatches<T>(n: number, size: number, fn: (i: number) => Promise<T>): Promise<T[]> {
      const out: T[] = [];
      for (let i = 0; i < n; i += size) {
        out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, j) => fn(i + j)))));
      }
      return out;
    }
    async function until(ids: string[], status: string, timeoutMs: number): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (ids.some((id) => rested.get(id) !== status)) {
        if (Date.now() > deadline) {
          const left = ids.filter((id) => rested.get(id) !== status).length;
          throw new Error(`scale: ${left} runs did not reach ${status} in ${timeoutMs} ms`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    }

    // ---- the waiting runs
    const [noExpiry, late, due] = o.waiting;
    const expiryOf = (i: number) =>
      i < noExpiry ? undefined : i < noExpiry + late ? 120 * MINUTE : 30 * MINUTE;
    const waitingIds = await inBatches(noExpiry + late + due, 25, (i) => {
      const expires = expiryOf(i);
      return create('wait', expires === undefined ? {} : { expires_in_ms: expires });
    });
    await until(waitingIds, 'waiting', 600_000);
    const waiting = new Set(waitingIds);
    const dueIds = waitingIds.slice(noExpiry + late);
    const idleIds = waitingIds.slice(0, noExpiry + late);
    const namingWaiting = () => [...waiting].reduce((s, id) => s + (named.get(id) ?? 0), 0);

    // ---- idle window: only waiting runs, no sweep
    await new Promise((r) => setTimeout(r, 1_500)); // let the last acknowledgements land
    const idleBefore = { requests, metrics: { ...store.metrics }, receives: sqsReceives };
    await new Promise((r) => setTimeout(r, o.idleWindowMs));
    const idleMetrics = Object.fromEntries(
      Object.entries(store.metrics).map(([k, v]) => [
        k,
        v - (idleBefore.metrics[k as keyof StoreMetrics] ?? 0),
      ]),
    ) as unknown as StoreMetrics;
    const idle = {
      ms: o.idleWindowMs,
      dynamodb_requests: requests - idleBefore.requests,
      sqs_empty_receives: sqsReceives - idleBefore.receives,
      store_metrics_delta: idleMetrics,
      load: load(),
    };

    // ---- running levels
    const levels: ScaleLevel[] = [];
    for (const level of o.levels) {
      const steps = Math.max(o.minSteps, Math.ceil(o.stepsPerLevel / level));
      const before = namingWaiting();
      const started = performance.now();
      const ids = await inBatches(level, 25, () => create('loop', { steps }));
      await until(ids, 'completed', 900_000);
      const wall = performance.now() - started;
      levels.push({
        running: level,
        steps_per_run: steps,
        steps: level * steps,
        wall_ms: Math.round(wall),
        steps_per_second: Math.round(((level * steps) / (wall / 1000)) * 10) / 10,
        requests_naming_a_waiting_run: namingWaiting() - before,
        load: load(),
      });
    }
    await poller.stop();

    // ---- sweeper passes: nothing due now; then 31 min later, the 30-min questions are due
    async function pass(sweeper: Engine, idleSet: string[]): Promise<SweepCost> {
      const before = {
        metrics: { ...store.metrics },
        sent: queue.sent(),
        transactions,
        named: new Map(named),
      };
      candidatesPerShard.fill(0);
      const started = performance.now();
      const report = await sweeper.sweep();
      const wall = performance.now() - started;
      const m = store.metrics;
      return {
        examined: report.examined,
        acted: report.expired + report.taken_over + report.woken + report.finalized,
        wall_ms: Math.round(wall * 10) / 10,
        queries: m.queries - before.metrics.queries,
        get_item: m.reads - before.metrics.reads,
        transact_write_items: transactions - before.transactions,
        sqs_sends: queue.sent() - before.sent,
        requests_naming_an_idle_run: idleSet.reduce(
          (s, id) => s + (named.get(id) ?? 0) - (before.named.get(id) ?? 0),
          0,
        ),
      };
    }
    const nothingDue = await pass(engine, waitingIds);
    const late31 = engineOn({ now: () => Date.now() + 31 * MINUTE });
    const duePass = await pass(late31, idleIds);
    const candidates = [...candidatesPerShard];
    const spread = (ids: string[]) => {
      const counts = Array.from({ length: SWEEP_SHARDS }, () => 0);
      for (const id of ids) {
        const shard = shardOf(id, SWEEP_SHARDS);
        counts[shard] = (counts[shard] ?? 0) + 1;
      }
      const mean = ids.length / SWEEP_SHARDS;
      return { counts, maxOverMean: Math.round((Math.max(...counts) / Math.max(mean, 1e-9)) * 100) / 100 };
    };
    const dueSpreadOf = spread(dueIds);
    const indexedSpread = spread(waitingIds.slice(noExpiry));
    const per = (x: number) => Math.round((x / Math.max(dueIds.length, 1)) * 100) / 100;
    clients.destroy();
    return {
      waiting_runs: { no_expiry: noExpiry, expiring_2h: late, expiring_30min: due },
      idle_window: idle,
      levels,
      sweep_nothing_due: nothingDue,
      sweep_due: {
        ...duePass,
        per_due_run: {
          get_item: per(duePass.get_item),
          transact_write_items: per(duePass.transact_write_items),
          sqs_sends: per(duePass.sqs_sends),
          ms: per(duePass.wall_ms),
        },
        per_idle_run: {
          requests:
            Math.round((duePass.requests_naming_an_idle_run / Math.max(idleIds.length, 1)) * 100) / 100,
        },
      },
      shard_spread: {
        shards: SWEEP_SHARDS,
        due_per_shard: dueSpreadOf.counts,
        max_over_mean: dueSpreadOf.maxOverMean,
        candidates_per_shard: candidates,
        indexed_per_shard: indexedSpread.counts,
        indexed_max_over_mean: indexedSpread.maxOverMean,
      },
      load: { before: loadBefore, after: load() },
    };
  } finally {
    await services.stop();
  }
}
