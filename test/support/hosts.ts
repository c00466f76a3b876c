/**
 * In-process hosts for engine tests: plain functions as reducers and tools, a scripted model,
 * a clock tests move forward, and the principals and subjects tests use. No I/O and no AWS
 * SDK, so unit-project tests load it at unit speed.
 */
import { randomUUID } from 'node:crypto';
import type {
  ModelTurnError,
  ModelTurnOutput,
  ReducerBinding,
  ToolDescriptor,
  ToolResultEnvelope,
} from '../../lib/contracts/index.ts';
import { sha256Hex } from '../../lib/core/canonical.ts';
import { envelopeOf as sharedEnvelopeOf } from '../../lib/core/tool-result-validation.ts';
import type {
  ModelHost,
  PolicyDecision,
  ReducerHost,
  ToolCallRequest,
  ToolHost,
} from '../../lib/engine/ports.ts';

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

export const alice = { principal: { kind: 'user' as const, id: 'alice' } };
export const system = { principal: { kind: 'system' as const, id: 'sweeper' } };

/** A fresh subject in `workspace` (one granted to the test's callers, or a user's own). */
export function subjectIn(workspace: string) {
  return { workspace, path: `/runs/${randomUUID()}` };
}

/** A fresh subject in `user`'s own workspace (`user:{user}`, default alice's: `alice` may create there). */
export function uniqueSubject(user = 'alice') {
  return { workspace: `user:${user}`, path: `/runs/${randomUUID()}` };
}
