/**
 * Builds an engine on the real local services (DynamoDB Local, fauxqs SQS and S3) with
 * in-process reducers, tools and models, for integration tests. Each call gets its own step
 * queue so that tests never share state.
 */
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import { type AwsClients, createAwsClients } from '../../lib/aws-clients.ts';
import { createS3BlobStore } from '../../lib/blobs/blob-store.ts';
import type {
  ModelTurnError,
  ModelTurnOutput,
  ReducerBinding,
  ToolDescriptor,
  ToolResultEnvelope,
} from '../../lib/contracts/index.ts';
import { sha256Hex } from '../../lib/core/canonical.ts';
import { envelopeOf as sharedEnvelopeOf } from '../../lib/core/tool-result-validation.ts';
import { type CrashPoint, createEngine, type Engine, type EngineOptions } from '../../lib/engine/engine.ts';
import type {
  ModelHost,
  PolicyDecision,
  ReducerHost,
  RunStore,
  StepQueue,
  ToolCallRequest,
  ToolHost,
} from '../../lib/engine/ports.ts';
import { createSqsStepQueue } from '../../lib/queue/step-queue.ts';
import { createDynamoRunStore } from '../../lib/store/dynamo-run-store.ts';

export type ReducerFn = (request: Record<string, unknown>) => unknown;

/** Calls plain functions as reducers (the sandbox host is tested on its own). */
export function inProcessReducers(fns: Record<string, ReducerFn>): ReducerHost & { calls: number } {
  const host = {
    calls: 0,
    async resolve(binding: ReducerBinding) {
      const fn = fns[binding.function_path];
      return fn === undefined ? null : { artifact_hash: sha256Hex(fn.toString()) };
    },
    async reduce(binding: ReducerBinding, request: unknown) {
      host.calls += 1;
      const fn = fns[binding.function_path];
      if (fn === undefined) return { kind: 'unavailable' as const, reason: 'missing' };
      const hash = sha256Hex(fn.toString());
      if (binding.artifact_hash !== undefined && binding.artifact_hash !== hash) {
        return { kind: 'changed' as const, bound_hash: binding.artifact_hash, found_hash: hash };
      }
      try {
        return {
          kind: 'answered' as const,
          response: JSON.parse(JSON.stringify(fn(request as Record<string, unknown>))),
          artifact_hash: hash,
        };
      } catch (err) {
        return { kind: 'threw' as const, code: 'reducer_threw', message: String(err) };
      }
    },
  };
  return host;
}

export type ToolFn = (request: ToolCallRequest, signal: AbortSignal) => Promise<unknown>;

export function envelopeOf(
  payload: unknown,
  status: ToolResultEnvelope['status'] = 'succeeded',
): ToolResultEnvelope {
  return sharedEnvelopeOf(status, payload);
}

/** Tools as plain functions, with execution counts per op_id and an optional gate. */
export function inProcessTools(
  fns: Record<string, ToolFn>,
  gate: (r: ToolCallRequest) => PolicyDecision = () => ({ decision: 'allow' }),
): ToolHost & { executions: Map<string, number> } {
  const executions = new Map<string, number>();
  return {
    executions,
    list: () =>
      Object.keys(fns).map(
        (name) => ({ name, version: '1.0.0', input_schema: {}, metadata: {} }) as unknown as ToolDescriptor,
      ),
    gate,
    async execute(request, signal) {
      executions.set(request.op_id, (executions.get(request.op_id) ?? 0) + 1);
      const fn = fns[request.tool];
      if (fn === undefined) return { ...envelopeOf(null, 'failed'), error_class: 'not_found' };
      const out = await fn(request, signal);
      return envelopeOf(out);
    },
  };
}

export type ModelFn = (turn: number, signal: AbortSignal) => Promise<ModelTurnOutput | ModelTurnError>;

export function scriptedModel(fn: ModelFn): ModelHost & { calls: number } {
  const host = {
    calls: 0,
    async turn(_input: unknown, _context: unknown, signal: AbortSignal) {
      host.calls += 1;
      return fn(host.calls, signal);
    },
  };
  return host;
}

/** A clock that tests can move forward (lease expiry, request expiry). */
export function testClock(): { now: () => number; advance: (ms: number) => void } {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms) => (offset += ms) };
}

export interface TestEngine {
  engine: Engine;
  store: RunStore;
  queue: StepQueue & { queueUrl: string };
  clients: AwsClients;
  clock: ReturnType<typeof testClock>;
  /** Builds a second engine (another worker) on the same store, queue and clock. */
  another(overrides?: Partial<EngineOptions>): Engine;
  /** Receives and deletes every step message currently queued; returns their run ids. */
  drainMessages(): Promise<string[]>;
}

export async function makeTestEngine(
  parts: Pick<EngineOptions, 'reducers' | 'tools' | 'models'> &
    Partial<EngineOptions> & { crash?: (p: CrashPoint, runId: string) => void | Promise<void> },
): Promise<TestEngine> {
  const local = inject('localServices');
  const clients = createAwsClients(local);
  const blobs = createS3BlobStore(clients.s3, local.bucketName);
  const store = parts.store ?? createDynamoRunStore({ doc: clients.doc, tableName: local.tableName, blobs });
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `step-${randomUUID().slice(0, 12)}` }),
  );
  const queueUrl = QueueUrl ?? '';
  const queue = Object.assign(createSqsStepQueue(clients.sqs, queueUrl), { queueUrl });
  const clock = testClock();
  const options: EngineOptions = {
    store,
    queue,
    clock,
    heartbeatMs: 1_000,
    wakeGraceMs: 1_000,
    ...parts,
    ...(parts.crash ? { faults: parts.crash } : {}),
  };
  return {
    engine: createEngine(options),
    store,
    queue,
    clients,
    clock,
    another: (overrides = {}) => createEngine({ ...options, faults: () => {}, ...overrides }),
    async drainMessages() {
      const ids: string[] = [];
      for (;;) {
        const out = await clients.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
        );
        const messages = out.Messages ?? [];
        if (messages.length === 0) return ids;
        for (const m of messages) {
          ids.push((JSON.parse(m.Body ?? '{}') as { run_id: string }).run_id);
          await clients.sqs.send(
            new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }),
          );
        }
      }
    },
  };
}

export const alice = { principal: { kind: 'user' as const, id: 'alice' } };
export const system = { principal: { kind: 'system' as const, id: 'sweeper' } };

export function uniqueSubject() {
  return { workspace: 'test', path: `/runs/${randomUUID()}` };
}
