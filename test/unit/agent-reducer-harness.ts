/**
 * Test harness of the agent-loop reducer: a small stand-in for core that builds
 * `raisin.agent-run.reducer/1` requests with contiguous seqs, checks every answer with core's
 * `validateReducerResponse` (the 13 rules), checks determinism and re-delivery, and applies the
 * effects the way core does (open requests, unanswered calls, run status). Also the tau-bench
 * replay: the event sequence of one recorded conversation. Not a test file itself.
 */
import { expect } from 'vitest';
import type { ContextMessage } from '../../lib/contracts/index.ts';
import {
  type Effect,
  type OpenRequestSummary,
  REDUCER_CONTRACT,
  ReducerRequest,
  type RunEvent,
  type RunEventKind,
  type ToolResultEnvelope,
} from '../../lib/contracts/index.ts';
import { canonicalByteLength, canonicalJson } from '../../lib/core/canonical.ts';
import { validateReducerResponse } from '../../lib/core/reducer-validation.ts';
import type { TauRecordedConversation } from '../../lib/models/tau-bench.ts';
import { type AgentLoopContext, type AgentLoopResponse, reduce } from '../../lib/reducers/index.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

export { TAU_BENCH_DIR };

/** Tools that change the booking database (tau-bench README). */
export const TAU_MUTATING_TOOLS = new Set([
  'book_reservation',
  'cancel_reservation',
  'update_reservation_baggages',
  'update_reservation_flights',
  'update_reservation_passengers',
  'send_certificate',
]);

export type ReduceFn = (request: unknown) => unknown;

type OperationEffectKind = 'call_tool' | 'request_model_turn' | 'request_approval' | 'ask_user';
const OPERATION_KINDS: ReadonlySet<string> = new Set([
  'call_tool',
  'request_model_turn',
  'request_approval',
  'ask_user',
]);

/** Events the driver can deliver: the reducer kinds (user_input is persisted as steer_consumed). */
type DeliverKind = ReducerRequest['event']['kind'];

export interface DeliverOptions {
  effect_id?: string;
  operation_id?: string;
  /** Skip the re-delivery check (used when a test re-delivers on purpose). */
  noRedeliveryCheck?: boolean;
}

/**
 * A stand-in for core around one run. `deliver` appends an event (seq = last + 1), calls the
 * reducer, asserts the answer passes `validateReducerResponse`, is deterministic and is a no-op
 * when the same event is re-delivered, then applies it.
 */
export class RunDriver {
  readonly runId: string;
  readonly reduceFn: ReduceFn;
  seq = 0;
  state: unknown = null;
  stateRev = 0;
  status = 'running';
  turn = 0;
  openRequests: OpenRequestSummary[] = [];
  unansweredCalls: string[] = [];
  /** The operation effect core holds (the last one the reducer asked for), or null. */
  pending: Effect | null = null;
  /** Persisted events, for the context compiler. */
  readonly log: RunEvent[] = [];
  readonly responses: AgentLoopResponse[] = [];
  maxStateBytes = 0;
  /** The last request delivered (for re-delivery tests). */
  lastRequest: ReducerRequest | null = null;
  private nextRequest = 0;

  constructor(runId = 'run-1', reduceFn: ReduceFn = reduce) {
    this.runId = runId;
    this.reduceFn = reduceFn;
  }

  /**
   * Commits the event and builds its request (seq = last + 1). Like core, the run
   * summary already reflects the event (its commit came first): calls of a completed model turn
   * are unanswered, a resolved request is no longer open, a stopped run is stopped.
   */
  private prepare(
    kind: DeliverKind,
    data: Record<string, unknown>,
    opts: DeliverOptions = {},
  ): ReducerRequest {
    const candidateEvent = {
      seq: this.seq + 1,
      kind,
      ...(opts.effect_id !== undefined && { effect_id: opts.effect_id }),
      ...(opts.operation_id !== undefined && { operation_id: opts.operation_id }),
      data,
    };
    const parsedEvent = ReducerRequest.shape.event.safeParse(candidateEvent);
    if (!parsedEvent.success) throw new Error(`harness built an invalid event: ${parsedEvent.error.message}`);
    const event = parsedEvent.data;
    this.commitEvent(event);
    const candidate = {
      contract: REDUCER_CONTRACT,
      accept: [REDUCER_CONTRACT],
      run: {
        run_id: this.runId,
        status: this.status,
        turn: this.turn,
        last_seq: this.seq + 1,
        usage: {},
        budgets: {},
        open_requests: this.openRequests,
        unanswered_calls: this.unansweredCalls,
        subject: { workspace: 'ai', path: `/agents/a/inbox/chats/${this.runId}` },
      },
      state: this.state,
      state_rev: this.stateRev,
      event,
    };
    const parsed = ReducerRequest.safeParse(candidate);
    if (!parsed.success) throw new Error(`harness built an invalid request: ${parsed.error.message}`);
    return parsed.data;
  }

  /** Delivers one event and returns the reducer's (validated) answer. */
  deliver(kind: DeliverKind, data: Record<string, unknown>, opts: DeliverOptions = {}): AgentLoopResponse {
    const request = this.prepare(kind, data, opts);
    this.lastRequest = request;
    const response = this.call(request);
    if (!opts.noRedeliveryCheck) this.checkRedelivery(request, response);
    this.apply(request, response);
    return response;
  }

  /** Calls the reducer, validates the answer with core's rules and checks it is deterministic. */
  call(request: ReducerRequest): AgentLoopResponse {
    const snapshot = canonicalJson(request);
    const raw = this.reduceFn(structuredClone(request));
    const verdict = validateReducerResponse(request, raw);
    if (!verdict.ok) {
      throw new Error(`reducer_refused:${verdict.code} at seq ${request.event.seq}: ${verdict.message}`);
    }
    const response = raw as AgentLoopResponse;
    expect(response.refused).toBeNull();
    const again = this.reduceFn(structuredClone(request));
    expect(canonicalJson(again)).toBe(canonicalJson(raw));
    expect(canonicalJson(request)).toBe(snapshot);
    return response;
  }

  /** The same event delivered again after the answer was committed changes nothing. */
  checkRedelivery(request: ReducerRequest, response: AgentLoopResponse): void {
    const redelivered = { ...request, state: response.state, state_rev: response.state_rev };
    const raw = this.reduceFn(structuredClone(redelivered)) as AgentLoopResponse;
    expect(validateReducerResponse(redelivered, raw).ok).toBe(true);
    expect(raw.state_rev).toBe(response.state_rev);
    expect(raw.effects).toEqual([]);
    expect(canonicalJson(raw.state)).toBe(canonicalJson(response.state));
  }

  /** What an event itself does to the run (core bookkeeping in the event's commit). */
  private commitEvent(event: ReducerRequest['event']): void {
    switch (event.kind) {
      case 'model_turn_completed':
        this.unansweredCalls = event.data.tool_calls.map((c) => c.call_id);
        this.turn += 1;
        break;
      case 'tool_result':
        if (event.data.envelope.status !== 'waiting' && event.data.call_id !== undefined) {
          const id = event.data.call_id;
          this.unansweredCalls = this.unansweredCalls.filter((c) => c !== id);
        }
        break;
      case 'request_resolved':
      case 'request_closed': {
        const id = event.data.request_id;
        this.openRequests = this.openRequests.filter((r) => r.request_id !== id);
        break;
      }
      case 'stopped':
        this.status = 'stopped';
        this.pending = null;
        break;
      default:
        break;
    }

    if (this.status === 'running' || this.status === 'waiting') {
      this.status = this.openRequests.length > 0 ? 'waiting' : 'running';
    }
  }

  private apply(request: ReducerRequest, response: AgentLoopResponse): void {
    const event = request.event;
    this.seq = event.seq;
    this.log.push(persisted(event));
    this.state = response.state;
    this.stateRev = response.state_rev;
    this.responses.push(response);
    this.maxStateBytes = Math.max(this.maxStateBytes, canonicalByteLength(response.state));

    // What the effects do.
    for (const effect of response.effects) {
      switch (effect.kind) {
        case 'withdraw_request':
          this.openRequests = this.openRequests.filter((r) => r.request_id !== effect.request_id);
          break;
        case 'ask_user':
        case 'request_approval':
          this.nextRequest += 1;
          this.openRequests = [
            ...this.openRequests,
            {
              request_id: `req-${this.nextRequest}`,
              kind: effect.kind === 'ask_user' ? 'input' : 'approval',
              effect_id: effect.effect_id,
            },
          ];
          break;
        case 'request_model_turn':
          this.unansweredCalls = [];
          break;
        case 'complete':
          this.status = 'completed';
          this.pending = null;
          break;
        case 'fail':
          this.status = 'failed';
          this.pending = null;
          break;
        default:
          break;
      }
      if (OPERATION_KINDS.has(effect.kind)) this.pending = effect;
    }
    if (this.status === 'running' || this.status === 'waiting') {
      this.status = this.openRequests.length > 0 ? 'waiting' : 'running';
    }
  }

  /** The operation effect core holds; fails the test when it is not of `kind`. */
  expectPending<K extends OperationEffectKind>(kind: K): Extract<Effect, { kind: K }> {
    const pending = this.pending;
    if (pending === null || pending.kind !== kind) {
      throw new Error(`expected a pending ${kind}, got ${pending === null ? 'none' : pending.kind}`);
    }
    return pending as Extract<Effect, { kind: K }>;
  }

  /** The open request the pending ask_user opened. */
  requestFor(effectId: string): OpenRequestSummary {
    const open = this.openRequests.find((r) => r.effect_id === effectId);
    if (open === undefined) throw new Error(`no open request for effect ${effectId}`);
    return open;
  }

  // ------------------------------------------------------------ event helpers

  start(input: unknown, context?: AgentLoopContext, objective?: string): AgentLoopResponse {
    return this.deliver('run_started', {
      input,
      ...(context !== undefined && { context }),
      ...(objective !== undefined && { objective }),
    });
  }

  /** Completes the pending model turn. */
  modelTurn(
    text: string | null,
    calls: { call_id: string; name: string; args: Record<string, unknown> }[] = [],
  ) {
    const turn = this.expectPending('request_model_turn');
    return this.deliver(
      'model_turn_completed',
      {
        message: { text },
        tool_calls: calls,
        finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
        usage: { input_tokens: 100, output_tokens: 20 },
      },
      { effect_id: turn.effect_id, operation_id: `${this.runId}/op/${turn.effect_id}` },
    );
  }

  /** Delivers the result of the pending call_tool. */
  toolResult(
    payload: unknown,
    status: ToolResultEnvelope['status'] = 'succeeded',
    extra: Partial<ToolResultEnvelope> = {},
  ) {
    const call = this.expectPending('call_tool');
    const operationId = `${this.runId}/op/${call.effect_id}`;
    return this.deliver(
      'tool_result',
      {
        ...(call.for_call_id !== undefined && { call_id: call.for_call_id }),
        tool: call.tool,
        envelope: { envelope: 'raisin.tool-result/1', operation_id: operationId, status, payload, ...extra },
      },
      { effect_id: call.effect_id, operation_id: operationId },
    );
  }

  /** Answers the pending ask_user. */
  answer(value: unknown) {
    const ask = this.expectPending('ask_user');
    const open = this.requestFor(ask.effect_id);
    return this.deliver(
      'request_resolved',
      { request_id: open.request_id, kind: 'input', value },
      { effect_id: ask.effect_id },
    );
  }

  /** Fails the pending operation. */
  fail(
    error_class: string,
    retryable: boolean,
    outcome_unknown: boolean,
    message = `${error_class} happened`,
  ) {
    const op = this.pending;
    if (op === null) throw new Error('no pending operation to fail');
    return this.deliver(
      'operation_failed',
      { error_class, retryable, outcome_unknown, message },
      { effect_id: op.effect_id, operation_id: `${this.runId}/op/${op.effect_id}` },
    );
  }

  steer(input: unknown, steerId = `steer-${this.seq + 1}`) {
    return this.deliver('user_input', { steer_id: steerId, input });
  }
}

/** The persisted form of a reducer event (user_input is stored as steer_consumed). */
function persisted(event: ReducerRequest['event']): RunEvent {
  const kind: RunEventKind = event.kind === 'user_input' ? 'steer_consumed' : event.kind;
  return {
    seq: event.seq,
    kind,
    at: 0,
    ...(event.effect_id !== undefined && { effect_id: event.effect_id }),
    ...(event.operation_id !== undefined && { operation_id: event.operation_id }),
    data: event.data as Record<string, unknown>,
  };
}

// ---------------------------------------------------------------- tau-bench

/** The agent-loop context of a tau-bench conversation: policy as instructions, the 14 tools. */
export function tauContext(
  system: string | null,
  tools: readonly { name: string; description?: string; schema: Record<string, unknown> }[],
): AgentLoopContext {
  return {
    ...(system !== null && { instructions: system }),
    mode: 'conversation',
    tools: tools.map((t) => ({
      name: t.name,
      kind: 'function' as const,
      schema: t.schema,
      ...(t.description !== undefined && { description: t.description }),
      mutating: TAU_MUTATING_TOOLS.has(t.name),
      ...(t.name === 'transfer_to_human_agents' && { ends_run: 'partial' as const }),
    })),
  };
}

/** What the replay observed, for assertions beyond the per-step ones. */
export interface ReplayReport {
  driver: RunDriver;
  /** How the recording ended: the reducer's last operation (or terminal effect). */
  last: Effect | null;
  modelTurns: number;
  toolCalls: number;
  asks: number;
  /** For every request_model_turn: the recorded messages the transcript must hold, and the effect. */
  modelRequests: { effect: Extract<Effect, { kind: 'request_model_turn' }>; expected: ContextMessage[] }[];
}

/**
 * Drives the reducer through one recorded conversation, asserting at every step that the
 * reducer asks for exactly what the recording does next: a model turn before each assistant
 * message, the recorded call (tool, args, for_call_id) before each tool message, ask_user with
 * the assistant's text before each customer message. A customer message with ###STOP### is the
 * customer leaving: it is not delivered (the run keeps waiting on ask_user).
 */
export function replayTauConversation(
  conv: TauRecordedConversation,
  context: AgentLoopContext,
  driver: RunDriver,
): ReplayReport {
  const messages = conv.messages;
  const startAt = messages[0]?.role === 'system' ? 1 : 0;
  const first = messages[startAt];
  if (first?.role !== 'user') throw new Error(`${conv.key}: no first customer message`);
  const report: ReplayReport = {
    driver,
    last: null,
    modelTurns: 0,
    toolCalls: 0,
    asks: 0,
    modelRequests: [],
  };
  driver.start(first.content, context);
  let lastCalls: string[] = [];
  for (let i = startAt + 1; i < messages.length; i++) {
    const message = messages[i];
    if (message === undefined) break;
    const seen = messages.slice(startAt, i);
    switch (message.role) {
      case 'assistant': {
        const turn = driver.expectPending('request_model_turn');
        expect(turn.tool_results?.map((r) => r.call_id) ?? []).toEqual(lastCalls);
        report.modelRequests.push({ effect: turn, expected: seen });
        report.modelTurns += 1;
        driver.modelTurn(message.content, message.tool_calls);
        lastCalls = message.tool_calls.map((c) => c.call_id);
        break;
      }
      case 'tool': {
        const call = driver.expectPending('call_tool');
        expect(call.for_call_id).toBe(message.call_id);
        expect(call.tool).toBe(message.name);
        const prior = [...messages.slice(0, i)].reverse().find((m) => m.role === 'assistant');
        const recorded =
          prior?.role === 'assistant'
            ? prior.tool_calls.find((c) => c.call_id === message.call_id)
            : undefined;
        expect(call.args).toEqual(recorded?.args);
        expect(call.mutating).toBe(TAU_MUTATING_TOOLS.has(message.name));
        expect(call.replay_safe).toBe(!TAU_MUTATING_TOOLS.has(message.name));
        report.toolCalls += 1;
        const failed = message.content.startsWith('Error:');
        driver.toolResult(
          message.content,
          failed ? 'failed' : 'succeeded',
          failed ? { error_class: 'tool_error' } : {},
        );
        break;
      }
      case 'user': {
        const ask = driver.expectPending('ask_user');
        const prior = messages[i - 1];
        expect(prior?.role).toBe('assistant');
        expect(ask.question).toBe(prior?.role === 'assistant' ? prior.content : undefined);
        report.asks += 1;
        if (message.content.includes('###STOP###')) {
          report.last = driver.pending;
          return report;
        }
        driver.answer(message.content);
        break;
      }
      case 'system':
        throw new Error(`${conv.key}: a system message at ${i}`);
    }
  }
  const terminal = driver.responses.at(-1)?.effects.find((e) => e.kind === 'complete' || e.kind === 'fail');
  report.last = terminal ?? driver.pending;
  return report;
}
