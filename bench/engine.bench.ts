/**
 * Engine cost per operation on the local services (DynamoDB Local + fauxqs, started here).
 * Run: `npx node bench/engine.bench.ts [runs] [operations] [pollers]` (defaults 20, 20, 4).
 * Issue 3, "Benchmark"; DESIGN section 5 ("The floor is one TransactWriteItems per operation").
 *
 * Drives `runs` runs of `operations` tool calls each (instant tool, trivial reducer: the
 * toolLoop of test/support/reducers.ts) through createEngine over SQS, the way the step Lambda
 * does (receive a batch, stepRun per message, delete), after a few warm-up runs, in phases:
 * - A, latency: one run at a time (batches of one message), for the per-operation overhead: the
 *   time from one operation's start commit to the next one's, minus the tool's own time; and
 *   the hot-path request counts (between a run's first and last start commit). The floors are
 *   sampled between its runs: one raw TransactWriteItems of the same item sizes (the captured
 *   run-record Update with its version + fence condition, and one event Put: a page holding
 *   only the tool_result event), the same raw transaction with all the items a fused commit
 *   carries (the record Update + its event page(s), which hold the commit's events and domain
 *   state), and one SQS send + receive + delete;
 * - B, throughput: all runs at once, `pollers` concurrent receivers with batches of up to 10,
 *   beside the emulator's own ceiling (raw fused commits per second at the same concurrency);
 * - C, yielding steps: a short lease and a 100 ms tool, so that every step reaches its deadline
 *   (lease / 2) with work left and must leave exactly one wake-up message behind.
 * Also the write units per operation (DynamoDB Local's consumed capacity) beside the payload
 * floor (the bytes the commits persisted as events and state, at 1 unit per KB; target: at most
 * 2.0 units all-in, issue 24; 3.5 in issue 18), and the cost per 1M operations on AWS at the published prices
 * beside the same operations priced as Step Functions Standard transitions and as Lambda
 * durable-function operations (PRICES below).
 * Prints a table and writes reports/bench-engine.json. Targets: at most one TransactWriteItems
 * and one strongly consistent read per operation on the hot path; at most one SQS message per
 * invocation; overhead p50 at most 1.2x the TransactWriteItems floor p50 (issue 24; 1.5x in
 * issue 18).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  type DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { createAwsClients } from '../lib/aws-clients.ts';
import { createS3BlobStore } from '../lib/blobs/blob-store.ts';
import type { ReducerBinding, ToolResultEnvelope } from '../lib/contracts/index.ts';
import { sha256Hex } from '../lib/core/canonical.ts';
import { createEngine } from '../lib/engine/engine.ts';
import type { ModelHost, ReducerHost, RunStore, ToolHost } from '../lib/engine/ports.ts';
import { ensureResources } from '../lib/local/resources.ts';
import { startLocalServices } from '../lib/local/services.ts';
import { type Progress, startProgress } from '../lib/progress.ts';
import { createSqsStepQueue } from '../lib/queue/step-queue.ts';
import { createDynamoRunStore } from '../lib/store/dynamo-run-store.ts';
import { pageEntries } from '../lib/store/item-codec.ts';
import { toolLoop } from '../test/support/reducers.ts';

const RUNS = Number(process.argv[2] ?? 20);
const OPS = Number(process.argv[3] ?? 20);
const POLLERS = Number(process.argv[4] ?? 4);
const FLOOR_SAMPLES = 300;
const WARMUP_RUNS = 3;
/** Phase C: runs whose steps yield at their deadline (lease TTL / 2) with work left. */
const YIELD_RUNS = 5;
/** Lease TTL of phase C (its steps yield at half of it) and its tool's time, both in ms. */
const YIELD_LEASE_MS = 2_000;
const YIELD_TOOL_MS = 100;
const TARGET_RATIO = 1.2;
/** Phase D: controls a second during the burst, the run's operations and each tool call's time (ms). */
const BURST_RATE = 50;
const BURST_OPS = 50;
const BURST_TOOL_MS = 200;
const REPORT = 'reports/bench-engine.json';
/** Issue 24 (was 3.5, issue 18): write units per operation, all-in, on this workload. */
const TARGET_WRITE_UNITS = 2.0;

/**
 * Published on-demand prices, US East (N. Virginia), USD, as read on 2026-12-02: DynamoDB
 * $0.625 per million write request units and $0.125 per million read request units
 * (aws.amazon.com/dynamodb/pricing/on-demand); SQS standard $0.40 per million requests
 * (aws.amazon.com/sqs/pricing); Lambda $0.20 per million requests and $0.0000166667 per GB-s
 * on x86 (aws.amazon.com/lambda/pricing); Step Functions Standard $0.025 per 1,000 state
 * transitions (aws.amazon.com/step-functions/pricing); Lambda durable functions $8.00 per
 * million durable operations (aws.amazon.com/lambda/pricing, durable functions section).
 */
const PRICES = {
  dynamodb_write_unit: 0.625 / 1e6,
  dynamodb_read_unit: 0.125 / 1e6,
  sqs_request: 0.4 / 1e6,
  lambda_request: 0.2 / 1e6,
  lambda_gb_second: 0.0000166667,
  step_functions_transition: 0.025 / 1_000,
  durable_operation: 8 / 1e6,
} as const;
/** The step Lambda's memory (GB) for the GB-s of the runtime's own work (its overhead per operation). */
const STEP_LAMBDA_GB = 1;
/**
 * The same work elsewhere: each operation is a reducer step and a tool step, so 2 state
 * transitions (Step Functions) or 2 durable operations (context.step twice), before any wait,
 * retry or callback those services would also charge for.
 */
const STEPS_PER_OPERATION = 2;

/**
 * The AWS cost of 1M operations at the measured rates per operation (write and read units, SQS
 * requests, step invocations, and `overheadMs` of step Lambda time each), beside the same
 * operations priced as Step Functions Standard transitions and as durable-function operations.
 */
function costPerMillion(
  phase: {
    dynamodb_per_operation: { write_capacity_units: number; read_capacity_units: number };
    sqs_per_operation: { total_excluding_empty_receives: number };
    invocations: number;
    operations: number;
  },
  overheadMs: number,
) {
  const m = 1e6;
  const usd = (x: number) => Math.round(x * 100) / 100;
  const d = phase.dynamodb_per_operation;
  const runtime = {
    dynamodb_write_usd: usd(m * d.write_capacity_units * PRICES.dynamodb_write_unit),
    dynamodb_read_usd: usd(m * d.read_capacity_units * PRICES.dynamodb_read_unit),
    sqs_usd: usd(m * phase.sqs_per_operation.total_excluding_empty_receives * PRICES.sqs_request),
    lambda_requests_usd: usd((m * phase.invocations * PRICES.lambda_request) / phase.operations),
    lambda_duration_usd: usd(m * (overheadMs / 1000) * STEP_LAMBDA_GB * PRICES.lambda_gb_second),
  };
  return {
    prices_usd: PRICES,
    runtime: { ...runtime, total_usd: usd(Object.values(runtime).reduce((a, x) => a + x, 0)) },
    step_functions_standard_usd: usd(m * STEPS_PER_OPERATION * PRICES.step_functions_transition),
    lambda_durable_functions_usd: usd(m * STEPS_PER_OPERATION * PRICES.durable_operation),
  };
}

// ---------------------------------------------------------------- measuring

interface Series {
  n: number;
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
}

function summarize(samples: number[]): Series {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))] ?? Number.NaN;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  const mean = samples.reduce((s, x) => s + x, 0) / Math.max(samples.length, 1);
  return { n: samples.length, p50_ms: round(at(0.5)), p99_ms: round(at(0.99)), mean_ms: round(mean) };
}

/** Counts every request a client sends, by command name. */
function counted<T extends { send: (...args: never[]) => unknown }>(
  client: T,
  counts: Map<string, number>,
): T {
  const send = client.send.bind(client) as (command: unknown, ...rest: unknown[]) => unknown;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return (command: { constructor: { name: string } }, ...rest: unknown[]) => {
        const name = command.constructor.name.replace(/Command$/, '');
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return send(command, ...rest);
      };
    },
  });
}

const snapshot = (m: Map<string, number>) => new Map(m);
function diff(after: Map<string, number>, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out[k] = v - (before.get(k) ?? 0);
  return out;
}
const per = (x: number, ops: number) => Math.round((x / ops) * 1000) / 1000;

// ---------------------------------------------------------------- in-process ports

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

/** The instant tool; records how long each call took (the tool's own time, excluded from overhead). */
function toolHost(toolTimes: Map<string, number>, delayMs = 0, returned?: Map<string, number>): ToolHost {
  return {
    list: () => [],
    gate: () => ({ decision: 'allow' }),
    async execute(request) {
      const started = performance.now();
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
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
      toolTimes.set(request.op_id, performance.now() - started);
      returned?.set(request.op_id, performance.now());
      return envelope;
    },
  };
}

const noModel: ModelHost = {
  async turn() {
    return { error_class: 'unsupported', message: 'no model in this bench' };
  },
};

// ---------------------------------------------------------------- floors

type TransactItems = NonNullable<TransactWriteCommandInput['TransactItems']>;

/** The event kinds a transaction's event pages carry, in order. */
function eventKinds(items: TransactItems): string[] {
  return items.flatMap((i) =>
    (i.Put?.Item === undefined ? [] : (pageEntries(i.Put.Item) as { kind?: string }[])).map((e) =>
      String(e.kind),
    ),
  );
}

/**
 * Replays `items` (a real commit's items) as raw TransactWriteItems against a scratch record:
 * same attributes and sizes, retargeted to a scratch partition, the record's version condition
 * advanced each time and event-page sort keys made unique. `sample(n)` returns the latency of
 * each of n calls (ms).
 */
async function rawTransactions(doc: DynamoDBDocumentClient, items: TransactItems) {
  const pk = `FLOOR#${randomUUID()}`;
  const update = items.find((i) => i.Update !== undefined)?.Update;
  if (update === undefined) throw new Error('the captured commit has no record update');
  const values = update.ExpressionAttributeValues ?? {};
  await doc.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: update.TableName,
            Item: {
              pk,
              sk: 'R',
              version: 0,
              lease_owner: values[':fence_owner'],
              epoch: values[':fence_epoch'],
            },
          },
        },
      ],
    }),
  );
  let version = 0;
  return async function sample(samples: number): Promise<number[]> {
    const latencies: number[] = [];
    for (let n = 0; n < samples; n += 1) {
      const v = version;
      version += 1;
      const batch: TransactItems = items.map((item, j) => {
        if (item.Update !== undefined) {
          return {
            Update: {
              ...item.Update,
              Key: { pk, sk: 'R' },
              ExpressionAttributeValues: {
                ...item.Update.ExpressionAttributeValues,
                ':expected_version': v,
                ':version': v + 1,
              },
            },
          };
        }
        if (item.Put !== undefined) {
          const sk = String(item.Put.Item?.sk ?? '');
          const unique = sk.startsWith('E#') || sk.startsWith('D#') ? `${sk}#${v}.${j}` : sk;
          return { Put: { ...item.Put, Item: { ...item.Put.Item, pk, sk: unique } } };
        }
        return item;
      });
      const started = performance.now();
      await doc.send(new TransactWriteCommand({ TransactItems: batch }));
      latencies.push(performance.now() - started);
    }
    return latencies;
  };
}

/** One SQS send + receive + delete on a scratch queue; `sample(n)` returns n latencies (ms each). */
async function sqsRoundTrips(sqs: SQSClient) {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: `bench-floor-${randomUUID().slice(0, 8)}` }),
  );
  const url = QueueUrl ?? '';
  return {
    url,
    async sample(samples: number): Promise<number[]> {
      const latencies: number[] = [];
      for (let n = 0; n < samples; n += 1) {
        const started = performance.now();
        await sqs.send(
          new SendMessageCommand({ QueueUrl: url, MessageBody: JSON.stringify({ run_id: `floor-${n}` }) }),
        );
        const out = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1, WaitTimeSeconds: 1 }),
        );
        const m = out.Messages?.[0];
        if (m === undefined) throw new Error('the floor message did not come back');
        await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
        latencies.push(performance.now() - started);
      }
      return latencies;
    },
  };
}

// ---------------------------------------------------------------- main

const services = await startLocalServices();
try {
  const resources = await ensureResources(services);
  const clients = createAwsClients(services);
  const ddbCounts = new Map<string, number>();
  const sqsCounts = new Map<string, number>();
  /**
   * The first fused commit seen (an operation's result + the next one's start), for the floors:
   * its items as one transaction would carry them (record update first), whether the store sent
   * them as one TransactWriteItems or as plain writes (its page Put, then its record Update).
   */
  let fusedCommit: TransactItems | undefined;
  let fusedPage: TransactItems[number] | undefined;
  const doc = counted(clients.doc, ddbCounts);
  const capture = new Proxy(doc, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return (command: unknown) => {
        if (fusedCommit === undefined) {
          const items =
            command instanceof TransactWriteCommand
              ? (command.input.TransactItems ?? [])
              : command instanceof PutCommand
                ? [{ Put: command.input } as TransactItems[number]]
                : [];
          const kinds = eventKinds(items);
          if (kinds.includes('tool_result') && kinds.includes('operation_started')) {
            if (command instanceof PutCommand) fusedPage = structuredClone(items[0]);
            else fusedCommit = structuredClone(items);
          } else if (fusedPage !== undefined && command instanceof UpdateCommand) {
            fusedCommit = [{ Update: structuredClone(command.input) } as TransactItems[number], fusedPage];
          }
        }
        return (target.send as (c: unknown) => unknown)(command);
      };
    },
  });
  const sqs = counted(clients.sqs, sqsCounts);
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({
      QueueName: `bench-step-${randomUUID().slice(0, 8)}`,
      // Longer than any step, as the stack sets it above the step Lambda's timeout.
      Attributes: { VisibilityTimeout: '900' },
    }),
  );
  const queueUrl = QueueUrl ?? '';
  const blobs = createS3BlobStore(clients.s3, resources.bucketName);
  const base = createDynamoRunStore({ doc: capture, tableName: resources.tableName, blobs });

  /** When each operation's tool returned, and how long after that its result's commit landed (ms). */
  const toolReturned = new Map<string, number>();
  const commitDelays = new Map<string, number>();
  // When each run's operation_started commits landed, with the DynamoDB request counts then.
  const starts = new Map<string, { at: number; op: string; ddb: Map<string, number> }[]>();
  /** Bytes the commits persisted as payload: their events and domain state (JSON), the floor's measure. */
  let payloadBytes = 0;
  const store: RunStore = {
    ...base,
    metrics: base.metrics,
    async commit(c) {
      const out = await base.commit(c);
      payloadBytes += Buffer.byteLength(JSON.stringify(c.events));
      if (c.state !== undefined) payloadBytes += Buffer.byteLength(JSON.stringify(c.state.value ?? null));
      for (const e of c.events) {
        const returned = e.kind === 'tool_result' ? toolReturned.get(e.operation_id ?? '') : undefined;
        if (returned !== undefined) commitDelays.set(e.operation_id ?? '', performance.now() - returned);
      }
      // The table's stream consumer frees an ended run's subject (one write of the run's, which
      // its ending commit charged): made here, as that consumer would, so that its units count.
      if (c.events.some((e) => e.kind === 'run_completed' || e.kind === 'run_failed' || e.kind === 'stopped'))
        await base.releaseSubject(out);
      const started = c.events.find((e) => e.kind === 'operation_started');
      if (started?.operation_id !== undefined) {
        const list = starts.get(out.run_id) ?? [];
        list.push({ at: performance.now(), op: started.operation_id, ddb: snapshot(ddbCounts) });
        starts.set(out.run_id, list);
      }
      return out;
    },
  };
  const toolTimes = new Map<string, number>();
  const queue = createSqsStepQueue(sqs, queueUrl);
  const engine = createEngine({
    store,
    queue,
    clock: { now: () => Date.now() },
    reducers: reducerHost({ '/bench/loop': toolLoop(OPS) }),
    tools: toolHost(toolTimes),
    models: noModel,
    workerId: 'bench',
  });
  const caller = { principal: { kind: 'user' as const, id: 'bench' } };

  const completed = new Set<string>();
  /** The progress of the phase running (lines on a pipe, a bar on a terminal): runs completed. */
  let phaseProgress: Progress | null = null;
  const startPhase = (label: string, total: number) => {
    phaseProgress = startProgress({
      label: `bench ${label}`,
      total,
      unit: 'runs',
      out: (line) => console.log(line),
      tty: process.stdout.isTTY ? process.stdout : undefined,
    });
  };
  const endPhase = () => {
    phaseProgress?.stop();
    phaseProgress = null;
  };
  let lastCompletion = 0;
  let invocations = 0;
  let emptyReceives = 0;
  /** Messages the engine sent during each invocation (a batch of step messages). */
  const sendsPerInvocation: number[] = [];
  /** One step Lambda: receive a batch, stepRun per message, delete each; until `target` runs completed. */
  async function poller(
    batch: number,
    target: number,
    worker = engine,
    sends = sendsPerInvocation,
  ): Promise<void> {
    let idle = 0;
    while (completed.size < target) {
      const out = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: batch, WaitTimeSeconds: 1 }),
      );
      const messages = out.Messages ?? [];
      if (messages.length === 0) {
        emptyReceives += 1;
        idle += 1;
        if (idle > 60) throw new Error(`stalled: ${completed.size} of ${target} runs completed`);
        continue;
      }
      idle = 0;
      invocations += 1;
      const sentBefore = queue.sent();
      await Promise.all(
        messages.map(async (m) => {
          const { run_id } = JSON.parse(m.Body ?? '{}') as { run_id: string };
          const outcome = await worker.stepRun(run_id);
          if (outcome.kind === 'progressed' && outcome.status === 'completed') {
            completed.add(run_id);
            lastCompletion = performance.now();
            phaseProgress?.tick();
          }
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
        }),
      );
      sends.push(queue.sent() - sentBefore);
    }
  }
  async function createRun(i: number): Promise<string> {
    const { run } = await engine.createRun(
      {
        subject: { workspace: 'user:bench', path: `/runs/${randomUUID()}` },
        reducer: { function_path: '/bench/loop' },
        input: i,
      },
      caller,
    );
    return run.run_id;
  }
  const phaseCounts = () => ({
    ddb: snapshot(ddbCounts),
    sqs: snapshot(sqsCounts),
    metrics: { ...base.metrics },
    empty: emptyReceives,
    invocations,
    payload: payloadBytes,
  });
  function phaseReport(before: ReturnType<typeof phaseCounts>, ops: number) {
    const ddb = diff(ddbCounts, before.ddb);
    const sqsDiff = diff(sqsCounts, before.sqs);
    const empty = emptyReceives - before.empty;
    const m = base.metrics;
    return {
      operations: ops,
      dynamodb_requests: ddb,
      dynamodb_per_operation: {
        transact_write_items: per(ddb.TransactWrite ?? 0, ops),
        consistent_reads: per((ddb.Get ?? 0) + (ddb.BatchGet ?? 0) + (ddb.Query ?? 0), ops),
        get_item: per(ddb.Get ?? 0, ops),
        batch_get_item: per(ddb.BatchGet ?? 0, ops),
        query: per(ddb.Query ?? 0, ops),
        store_metrics_reads: per(m.reads - before.metrics.reads, ops),
        store_metrics_queries: per(m.queries - before.metrics.queries, ops),
        store_metrics_transactions: per(m.transactions - before.metrics.transactions, ops),
        transaction_retries: per(m.transactionRetries - before.metrics.transactionRetries, ops),
        read_capacity_units: per(m.readCapacity - before.metrics.readCapacity, ops),
        write_capacity_units: per(m.writeCapacity - before.metrics.writeCapacity, ops),
        // The floor: the bytes an operation must persist (its events and state), at 1 unit per KB.
        payload_bytes: per(payloadBytes - before.payload, ops),
        payload_floor_write_units: per((payloadBytes - before.payload) / 1024, ops),
      },
      sqs_requests: { ...sqsDiff, ReceiveMessage_empty: empty },
      sqs_per_operation: {
        send: per(sqsDiff.SendMessage ?? 0, ops),
        receive: per((sqsDiff.ReceiveMessage ?? 0) - empty, ops),
        delete: per(sqsDiff.DeleteMessage ?? 0, ops),
        total_excluding_empty_receives: per(
          (sqsDiff.SendMessage ?? 0) + (sqsDiff.ReceiveMessage ?? 0) - empty + (sqsDiff.DeleteMessage ?? 0),
          ops,
        ),
      },
      invocations: invocations - before.invocations,
    };
  }

  // ---- warm-up (not measured): JIT of both processes, and a real fused commit to replay.
  for (let i = 0; i < WARMUP_RUNS; i += 1) {
    await createRun(-1 - i);
    await poller(1, completed.size + 1);
  }
  if (fusedCommit === undefined) throw new Error('no fused commit was seen');
  const fused = fusedCommit;
  const eventPages = fused.filter((i) => String(i.Put?.Item?.sk ?? '').startsWith('E#'));
  const resultPage = eventPages.find((i) => eventKinds([i]).includes('tool_result'))?.Put;
  const resultEvent = (
    resultPage?.Item === undefined
      ? undefined
      : (pageEntries(resultPage.Item) as { kind?: string; seq?: number }[])
  )?.find((e) => e.kind === 'tool_result');
  const recordUpdate = fused.find((i) => i.Update !== undefined);
  if (resultPage === undefined || resultEvent === undefined || recordUpdate === undefined)
    throw new Error('unexpected fused commit');
  // One event Put: a page holding only the tool_result event (no domain state).
  const resultPut: TransactItems[number] = {
    Put: {
      ...resultPage,
      Item: {
        pk: resultPage.Item?.pk,
        sk: resultPage.Item?.sk,
        first_seq: resultEvent.seq,
        last_seq: resultEvent.seq,
        events: [resultEvent],
      },
    },
  };
  const twoItemFloor = await rawTransactions(clients.doc, [recordUpdate, resultPut]);
  const fusedFloor = await rawTransactions(clients.doc, fused);
  const sqsFloor = await sqsRoundTrips(clients.sqs);
  await twoItemFloor(20);
  await fusedFloor(20);
  await sqsFloor.sample(5);

  // ---- phase A: latency, one run at a time (batches of one message); the floors are sampled
  // between its runs, so that both see the services in the same state.
  const floorSamples = { two: [] as number[], fused: [] as number[], sqs: [] as number[] };
  const perRun = Math.ceil(FLOOR_SAMPLES / RUNS);
  const beforeA = phaseCounts();
  let wallA = 0;
  const latencyRuns: string[] = [];
  startPhase('phase A (latency, one run at a time)', RUNS);
  for (let i = 0; i < RUNS; i += 1) {
    const startedRun = performance.now();
    latencyRuns.push(await createRun(i));
    await poller(1, completed.size + 1);
    wallA += performance.now() - startedRun;
    floorSamples.two.push(...(await twoItemFloor(perRun)));
    floorSamples.fused.push(...(await fusedFloor(perRun)));
    floorSamples.sqs.push(...(await sqsFloor.sample(Math.ceil(perRun / 3))));
    // (the floors use the uncounted clients: the phase's request counts stay the engine's own)
  }
  endPhase();
  const latency = phaseReport(beforeA, RUNS * OPS);
  const overheads: number[] = [];
  const hot = new Map<string, number>();
  let hotOps = 0;
  for (const id of latencyRuns) {
    const list = starts.get(id) ?? [];
    for (let i = 0; i + 1 < list.length; i += 1) {
      const a = list[i];
      const b = list[i + 1];
      if (a === undefined || b === undefined) continue;
      overheads.push(b.at - a.at - (toolTimes.get(a.op) ?? 0));
    }
    const first = list[0];
    const last = list.at(-1);
    if (first === undefined || last === undefined || list.length < 2) continue;
    for (const [k, v] of Object.entries(diff(last.ddb, first.ddb))) hot.set(k, (hot.get(k) ?? 0) + v);
    hotOps += list.length - 1;
  }
  const hotPath = {
    operations: hotOps,
    transact_write_items: per(hot.get('TransactWrite') ?? 0, hotOps),
    consistent_reads: per(
      (hot.get('Get') ?? 0) + (hot.get('BatchGet') ?? 0) + (hot.get('Query') ?? 0),
      hotOps,
    ),
  };

  // ---- phase B: throughput, every run at once, POLLERS step Lambdas with batches of 10
  const beforeB = phaseCounts();
  const target = completed.size + RUNS;
  const startedB = performance.now();
  startPhase(`phase B (throughput, ${POLLERS} pollers)`, RUNS);
  await Promise.all(Array.from({ length: RUNS }, (_, i) => createRun(RUNS + i)));
  await Promise.all(Array.from({ length: POLLERS }, () => poller(10, target)));
  endPhase();
  const wallB = lastCompletion - startedB;
  const throughput = phaseReport(beforeB, RUNS * OPS);

  // ---- phase C: steps that yield (a short lease, so each step reaches its deadline, lease/2,
  // after a few operations): each invocation must leave exactly one wake-up behind.
  const yielding = createEngine({
    store,
    queue,
    clock: { now: () => Date.now() },
    reducers: reducerHost({ '/bench/loop': toolLoop(OPS) }),
    tools: toolHost(toolTimes, YIELD_TOOL_MS),
    models: noModel,
    workerId: 'bench-yield',
    leaseTtlMs: YIELD_LEASE_MS,
  });
  const yieldSends: number[] = [];
  const beforeC = phaseCounts();
  const targetC = completed.size + YIELD_RUNS;
  for (let i = 0; i < YIELD_RUNS; i += 1) await createRun(2 * RUNS + i);
  startPhase('phase C (steps that yield)', YIELD_RUNS);
  await poller(1, targetC, yielding, yieldSends);
  endPhase();
  const yieldingPhase = phaseReport(beforeC, YIELD_RUNS * OPS);

  // ---- phase D: one run's step worker under a sustained burst of controls (BURST_RATE a second,
  // steers applied and resumes / approvals rejected, mixed) from another process; and the same
  // run shape without controls, as its floor. Commits the worker lost to a control are rebased.
  async function burstRun(withControls: boolean) {
    const worker = createEngine({
      store,
      queue,
      clock: { now: () => Date.now() },
      reducers: reducerHost({ '/bench/loop': toolLoop(BURST_OPS) }),
      tools: toolHost(toolTimes, BURST_TOOL_MS, toolReturned),
      models: noModel,
      workerId: `bench-burst-${withControls}`,
    });
    const client = createEngine({
      store,
      queue,
      clock: { now: () => Date.now() },
      reducers: reducerHost({}),
      tools: toolHost(toolTimes),
      models: noModel,
      workerId: 'bench-controls',
    });
    const { run } = await worker.createRun(
      {
        subject: { workspace: 'user:bench', path: `/burst/${randomUUID()}` },
        reducer: { function_path: '/bench/loop' },
        input: 0,
      },
      caller,
    );
    let done = false;
    const acks = { applied: 0, rejected: 0, duplicate: 0 };
    const burst = (async () => {
      for (let i = 0; withControls && !done; i += 1) {
        const sent = performance.now();
        const control =
          i % 2 === 0
            ? { control_id: `steer-${i}`, command: 'steer' as const, input: `note ${i}` }
            : i % 4 === 1
              ? { control_id: `resume-${i}`, command: 'resume' as const }
              : {
                  control_id: `approve-${i}`,
                  command: 'approve' as const,
                  request_id: 'none',
                  subject_digest: 'x',
                };
        const ack = await client.applyControl(run.run_id, control, caller);
        acks[ack.ack] += 1;
        await new Promise((r) => setTimeout(r, Math.max(0, 1000 / BURST_RATE - (performance.now() - sent))));
      }
    })();
    const started = performance.now();
    let rebases = 0;
    for (let i = 0; i < 1_000; i += 1) {
      const outcome = await worker.stepRun(run.run_id);
      if (outcome.kind === 'progressed') {
        rebases += outcome.rebases;
        if (outcome.status === 'completed') break;
      }
    }
    const wall = performance.now() - started;
    done = true;
    await burst;
    const record = await store.getRun(run.run_id);
    if (record?.status !== 'completed') throw new Error(`burst run ended ${record?.status}`);
    const events = await base.readEvents(run.run_id, 0, 100_000);
    const commits = new Set(events.filter((e) => e.kind === 'tool_result').map((e) => e.operation_id)).size;
    const delays = events
      .filter((e) => e.kind === 'tool_result')
      .map((e) => commitDelays.get(e.operation_id ?? '') ?? Number.NaN)
      .filter((d) => Number.isFinite(d));
    return {
      controls: acks,
      controls_per_second: Math.round(((acks.applied + acks.rejected + acks.duplicate) / wall) * 10_000) / 10,
      operations_committed: commits,
      worker_commits_per_second: Math.round((commits / wall) * 10_000) / 10,
      worker_rebases: rebases,
      result_commit_delay_ms: summarize(delays),
      wall_ms: Math.round(wall),
    };
  }
  const burstFloor = await burstRun(false);
  const burstPhase = await burstRun(true);

  // ---- the emulator's own ceiling for this commit shape at phase B's concurrency (runs in flight)
  const inFlight = Math.min(RUNS, 10 * POLLERS);
  const perWorker = Math.ceil((RUNS * OPS) / inFlight);
  const floors = await Promise.all(
    Array.from({ length: inFlight }, () => rawTransactions(clients.doc, fused)),
  );
  const startedCeiling = performance.now();
  await Promise.all(floors.map((sample) => sample(perWorker)));
  const ceiling =
    Math.round(((inFlight * perWorker) / ((performance.now() - startedCeiling) / 1000)) * 10) / 10;
  const floorTwo = summarize(floorSamples.two);
  const floorFused = summarize(floorSamples.fused);
  const floorSqs = summarize(floorSamples.sqs);
  const sizes = (items: TransactItems) =>
    items.map((i) =>
      Buffer.byteLength(JSON.stringify(i.Put?.Item ?? i.Update?.ExpressionAttributeValues ?? {})),
    );
  // DynamoDB Local reports a transaction's capacity from its total size; DynamoDB charges each
  // item of a transaction 2 WCU per started KB. This estimates the latter from the JSON sizes.
  const awsTransactionalWcu = sizes(fused).reduce((sum, bytes) => sum + 2 * Math.ceil(bytes / 1024), 0);
  // The same items as plain writes (a page Put, then the record Update): 1 WCU per item per KB.
  const awsPlainWcu = sizes(fused).reduce((sum, bytes) => sum + Math.ceil(bytes / 1024), 0);
  await clients.sqs.send(new DeleteQueueCommand({ QueueUrl: sqsFloor.url }));

  const overhead = summarize(overheads);
  const cost = costPerMillion(latency, overhead.p50_ms);
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const opsPerSecond = Math.round(((RUNS * OPS) / (wallB / 1000)) * 10) / 10;
  const mean = (xs: number[]) =>
    per(
      xs.reduce((a, x) => a + x, 0),
      Math.max(xs.length, 1),
    );
  const max = (xs: number[]) => Math.max(0, ...xs);
  const maxSends = Math.max(max(sendsPerInvocation), max(yieldSends));
  const result = {
    bench: 'engine',
    node: process.version,
    runs: RUNS,
    operations_per_run: OPS,
    pollers: POLLERS,
    services: 'DynamoDB Local + fauxqs (started by the bench)',
    latency_phase: { wall_ms: Math.round(wallA), ...latency, hot_path: hotPath },
    throughput_phase: { wall_ms: Math.round(wallB), operations_per_second: opsPerSecond, ...throughput },
    overhead_per_operation: overhead,
    floors: {
      transact_write_record_update_plus_one_event: floorTwo,
      transact_write_same_items_as_fused_commit: {
        ...floorFused,
        items: fused.length,
        event_pages: eventPages.length,
        events: eventKinds(fused).length,
      },
      sqs_send_receive_delete: floorSqs,
      raw_fused_commits_per_second_at_phase_b_concurrency: { concurrency: inFlight, per_second: ceiling },
      item_bytes: {
        record_update_values: sizes([recordUpdate])[0],
        one_event_put: sizes([resultPut])[0],
        event_pages: sizes(eventPages),
      },
      fused_commit_wcu_at_aws_transactional_rates_estimate: awsTransactionalWcu,
      fused_commit_wcu_at_aws_plain_rates_estimate: awsPlainWcu,
    },
    ratios: {
      overhead_p50_to_two_item_floor_p50: ratio(overhead.p50_ms, floorTwo.p50_ms),
      overhead_p99_to_two_item_floor_p99: ratio(overhead.p99_ms, floorTwo.p99_ms),
      overhead_p50_to_fused_floor_p50: ratio(overhead.p50_ms, floorFused.p50_ms),
    },
    sqs_messages_per_invocation: {
      finishing_steps: {
        invocations: sendsPerInvocation.length,
        mean: mean(sendsPerInvocation),
        max: max(sendsPerInvocation),
      },
      yielding_steps: { invocations: yieldSends.length, mean: mean(yieldSends), max: max(yieldSends) },
    },
    yielding_phase: { runs: YIELD_RUNS, lease_ttl_ms: YIELD_LEASE_MS, ...yieldingPhase },
    control_burst_phase: {
      rate_per_second: BURST_RATE,
      operations: BURST_OPS,
      tool_ms: BURST_TOOL_MS,
      with_controls: burstPhase,
      floor_without_controls: burstFloor,
    },
    write_units_per_operation: {
      all_in: latency.dynamodb_per_operation.write_capacity_units,
      payload_floor: latency.dynamodb_per_operation.payload_floor_write_units,
      payload_bytes: latency.dynamodb_per_operation.payload_bytes,
      target: TARGET_WRITE_UNITS,
    },
    cost_per_million_operations: cost,
    targets: {
      write_units_per_operation_at_most_2_0:
        latency.dynamodb_per_operation.write_capacity_units <= TARGET_WRITE_UNITS,
      one_transact_write_per_operation_hot_path: hotPath.transact_write_items <= 1,
      one_consistent_read_per_operation_hot_path: hotPath.consistent_reads <= 1,
      one_sqs_message_per_invocation: maxSends <= 1,
      overhead_at_most_1_2x_floor: ratio(overhead.p50_ms, floorTwo.p50_ms) <= TARGET_RATIO,
    },
  };

  const row = (name: string, value: string | number) => console.log(`${name.padEnd(58)} ${value}`);
  console.log(`engine bench: ${RUNS} runs x ${OPS} operations, ${POLLERS} pollers (node ${process.version})`);
  row(
    'fused commit: items (record update + event pages) / events',
    `${fused.length} (1 + ${eventPages.length}${fused.length > 1 + eventPages.length ? ` + ${fused.length - 1 - eventPages.length} other` : ''}) / ${eventKinds(fused).join(', ')}`,
  );
  row('fused commit: WCU at AWS rates, plain / as one TWI (est.)', `${awsPlainWcu} / ${awsTransactionalWcu}`);
  row(
    'write units per operation, all-in / payload floor (1 per KB)',
    `${latency.dynamodb_per_operation.write_capacity_units} / ${latency.dynamodb_per_operation.payload_floor_write_units} (${latency.dynamodb_per_operation.payload_bytes} bytes; target <= ${TARGET_WRITE_UNITS})`,
  );
  row('cost per 1M operations: this runtime on AWS (USD)', cost.runtime.total_usd);
  row(
    '  DynamoDB writes / reads, SQS, Lambda requests + GB-s',
    `${cost.runtime.dynamodb_write_usd} / ${cost.runtime.dynamodb_read_usd}, ${cost.runtime.sqs_usd}, ${cost.runtime.lambda_requests_usd} + ${cost.runtime.lambda_duration_usd}`,
  );
  row(
    `same work as Step Functions Standard (${STEPS_PER_OPERATION} transitions/op)`,
    cost.step_functions_standard_usd,
  );
  row(
    `same work as Lambda durable functions (${STEPS_PER_OPERATION} operations/op)`,
    cost.lambda_durable_functions_usd,
  );
  row('hot path: TransactWriteItems per operation', hotPath.transact_write_items);
  row('hot path: consistent reads (Get/BatchGet/Query) per op', hotPath.consistent_reads);
  row(
    'all-in (latency phase): TransactWriteItems per op',
    latency.dynamodb_per_operation.transact_write_items,
  );
  row('all-in (latency phase): consistent reads per op', latency.dynamodb_per_operation.consistent_reads);
  row(
    'all-in (latency phase): read / write capacity units per op',
    `${latency.dynamodb_per_operation.read_capacity_units} / ${latency.dynamodb_per_operation.write_capacity_units}`,
  );
  row(
    'all-in (latency phase): SQS requests per op',
    latency.sqs_per_operation.total_excluding_empty_receives,
  );
  const spi = result.sqs_messages_per_invocation;
  row(
    'SQS messages per invocation, steps that finish (mean / max)',
    `${spi.finishing_steps.mean} / ${spi.finishing_steps.max}`,
  );
  row(
    `SQS messages per invocation, ${spi.yielding_steps.invocations} steps that yield (mean / max)`,
    `${spi.yielding_steps.mean} / ${spi.yielding_steps.max}`,
  );
  row('throughput: operations per second', opsPerSecond);
  row(`ceiling: raw fused commits per second (${inFlight} concurrent)`, ceiling);
  row('overhead per operation p50 / p99 (ms)', `${overhead.p50_ms} / ${overhead.p99_ms}`);
  row('floor: raw TWI record update + 1 event p50 / p99 (ms)', `${floorTwo.p50_ms} / ${floorTwo.p99_ms}`);
  row(
    `floor: raw TWI, same ${fused.length} items as a fused commit p50 / p99`,
    `${floorFused.p50_ms} / ${floorFused.p99_ms}`,
  );
  row('floor: SQS send + receive + delete p50 / p99 (ms)', `${floorSqs.p50_ms} / ${floorSqs.p99_ms}`);
  row(
    'overhead / two-item floor (p50)',
    `${result.ratios.overhead_p50_to_two_item_floor_p50}x (target <= ${TARGET_RATIO}x)`,
  );
  row('overhead / fused-items floor (p50)', `${result.ratios.overhead_p50_to_fused_floor_p50}x`);
  row(
    `control burst: controls/s sent (applied / rejected)`,
    `${burstPhase.controls_per_second} (${burstPhase.controls.applied} / ${burstPhase.controls.rejected})`,
  );
  row(
    'control burst: worker commits/s, with / without controls',
    `${burstPhase.worker_commits_per_second} / ${burstFloor.worker_commits_per_second}`,
  );
  row(
    'control burst: operations committed / rebased commits',
    `${burstPhase.operations_committed} of ${BURST_OPS} / ${burstPhase.worker_rebases}`,
  );
  row(
    'control burst: result commit delay p50 / p99 (ms)',
    `${burstPhase.result_commit_delay_ms.p50_ms} / ${burstPhase.result_commit_delay_ms.p99_ms}`,
  );
  row(
    'floor: same run, no controls, delay p50 / p99 (ms)',
    `${burstFloor.result_commit_delay_ms.p50_ms} / ${burstFloor.result_commit_delay_ms.p99_ms}`,
  );
  for (const [k, v] of Object.entries(result.targets)) row(`target ${k}`, v ? 'met' : 'NOT met');
  mkdirSync('reports', { recursive: true });
  writeFileSync(REPORT, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${REPORT}`);
  await clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  clients.destroy();
} finally {
  await services.stop();
}
