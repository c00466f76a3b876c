/**
 * The replay client and its oracle. The client plays the people around the agent over the
 * product's API: it creates one run per recorded conversation, answers each question with the
 * next recorded customer message, approves each approval quoting the digest it was shown, and
 * stops the run when the recording is exhausted. The oracle then checks, per conversation:
 * identical transcript at every model turn (no divergence reported by the recorded model, and
 * the final compiled transcript equal to the recording), every recorded tool call executed
 * exactly once (per op_id), contiguous seq, the expected final status, and no lease left. With
 * the live world, also: each live output equal to the recorded one, and as many mutating
 * operations executed as the recording has mutating calls (re-dispatches answered from receipts
 * are counted apart); the world's recomputed verdict is attached to the result.
 */
import type { ContextMessage, ControlAck, RunEvent, RunRecord, UsageCost } from '../contracts/index.ts';
import { canonicalJson } from '../core/canonical.ts';
import { compileContext } from '../core/context-compiler.ts';
import { RECORDING_CONFIG_KEY } from '../models/recorded.ts';
import { AGENT_LOOP_PATH } from '../reducers/index.ts';
import type { LiveAssessment } from './airline/live-world.ts';
import { agentLoopTools, MUTATING_TOOLS, type ReplayConversation } from './conversations.ts';
import type { ReplayWorld } from './world.ts';

/** The part of the product API the replay client uses (the HTTP client implements it). */
export interface ReplayApi {
  createRun(body: Record<string, unknown>): Promise<{ run: RunRecord; created: boolean }>;
  getRun(runId: string): Promise<RunRecord>;
  /** Events after `after`, long-polling up to `waitSeconds` when there are none. */
  events(runId: string, after: number, limit: number, waitSeconds: number): Promise<RunEvent[]>;
  control(runId: string, control: Record<string, unknown>): Promise<ControlAck>;
}

/** The model-turn function path the replay stack registers the recorded model at. */
export const RECORDED_MODEL_PATH = '/lib/models/recorded';

export interface Difference {
  /** Message index in the recording. */
  position: number;
  expected: unknown;
  got: unknown;
  source: 'model' | 'tool' | 'transcript' | 'status' | 'log';
  detail: string;
}

export interface ConversationResult {
  key: string;
  run_id: string | null;
  identical: boolean;
  status: string;
  expected_status: string;
  model_turns: number;
  tool_calls: number;
  approvals: number;
  answers: number;
  recoveries: number;
  /** Operations abandoned on a takeover that reached the reducer as outcome_unknown. */
  outcome_unknown: number;
  events: number;
  first_difference: Difference | null;
  /** The live world's counts and the recomputed benchmark verdict (live world only). */
  live?: LiveAssessment;
  /** The run's operations (its usage) and what it cost (its view's usage.cost), once judged. */
  operations?: number;
  cost?: UsageCost;
  error?: string;
}

export interface DriveOptions {
  tools: { name: string; description?: string; schema: Record<string, unknown> }[];
  /** Give up on a conversation after this long (ms). */
  timeoutMs?: number;
  /** Tools each run declares non-replay-safe (default none). */
  notReplaySafe?: ReadonlySet<string>;
}

function firstTranscriptDifference(expected: ContextMessage[], got: ContextMessage[]): Difference | null {
  const n = Math.max(expected.length, got.length);
  for (let i = 0; i < n; i += 1) {
    const e = expected[i];
    const g = got[i];
    if (e === undefined || g === undefined || canonicalJson(e) !== canonicalJson(g)) {
      return {
        position: i,
        expected: e ?? null,
        got: g ?? null,
        source: 'transcript',
        detail: `message ${i} differs`,
      };
    }
  }
  return null;
}

/** Replays one conversation through `api` and judges it. Never throws: errors become a result. */
export async function replayConversation(
  api: ReplayApi,
  world: ReplayWorld,
  conversation: ReplayConversation,
  options: DriveOptions,
): Promise<ConversationResult> {
  const result: ConversationResult = {
    key: conversation.key,
    run_id: null,
    identical: false,
    status: 'not_started',
    expected_status: conversation.expectedStatus,
    model_turns: 0,
    tool_calls: 0,
    approvals: 0,
    answers: 0,
    recoveries: 0,
    outcome_unknown: 0,
    events: 0,
    first_difference: null,
  };
  const deadline = Date.now() + (options.timeoutMs ?? 180_000);
  try {
    const { run } = await api.createRun({
      subject: conversation.subject,
      reducer: { function_path: AGENT_LOOP_PATH },
      input: conversation.firstInput,
      context: {
        instructions: conversation.instructions,
        tools: agentLoopTools(options.tools, options.notReplaySafe),
        mode: 'conversation',
      },
      // The recording has exactly this many model turns: one more would have nothing to replay.
      // Turns, not provider calls: a request lost with a killed worker is a call (usage counts
      // it) but not a turn, so chaos does not eat the budget of the conversation.
      budgets: { max_turns: conversation.modelTurns },
      on_exceeded: 'pause',
      create_key: `replay:${conversation.key}`,
      executor_config: { model_turn_function: RECORDED_MODEL_PATH, [RECORDING_CONFIG_KEY]: conversation.key },
    });
    const runId = run.run_id;
    result.run_id = runId;
    let replyIndex = 0;
    let seen = run.last_seq;
    const handled = new Set<string>();
    for (;;) {
      if (Date.now() > deadline) throw new Error('replay timed out');
      const view = await api.getRun(runId);
      if (view.status === 'completed' || view.status === 'failed' || view.status === 'stopped') break;
      if (view.status === 'paused') {
        await api.control(runId, {
          control_id: `replay-stop:${runId}`,
          command: 'stop',
          reason: 'recording exhausted',
        });
        continue;
      }
      if (view.status === 'waiting') {
        for (const request of view.open_requests) {
          if (handled.has(request.request_id)) continue;
          if (request.kind === 'approval') {
            const ack = await api.control(runId, {
              control_id: `approve:${request.request_id}`,
              command: 'approve',
              request_id: request.request_id,
              subject_digest: request.subject.digest,
            });
            if (ack.ack !== 'rejected') result.approvals += 1;
          } else if (request.kind === 'input') {
            const reply = conversation.replies[replyIndex];
            if (reply === undefined || conversation.replyAnswered[replyIndex] !== true) {
              await api.control(runId, {
                control_id: `replay-stop:${runId}`,
                command: 'stop',
                reason: 'recording exhausted',
              });
            } else {
              await api.control(runId, {
                control_id: `answer:${request.request_id}`,
                command: 'provide_input',
                request_id: request.request_id,
                value: reply,
              });
              replyIndex += 1;
              result.answers += 1;
            }
          }
          handled.add(request.request_id);
        }
      }
      const fresh = await api.events(runId, Math.max(seen, view.last_seq), 100, 2);
      if (fresh.length > 0) seen = fresh[fresh.length - 1]?.seq ?? seen;
    }
    await judge(api, world, conversation, runId, result);
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    result.identical = false;
  }
  return result;
}

async function readAll(api: ReplayApi, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for (;;) {
    const page = await api.events(
      runId,
      events.length === 0 ? 0 : (events[events.length - 1]?.seq ?? 0),
      1000,
      0,
    );
    if (page.length === 0) return events;
    events.push(...page);
  }
}

/** Checks 1 to 3: a contiguous log, the model saw the recording, the world saw each recorded call once. */
function logDifferences(
  world: ReplayWorld,
  conversation: ReplayConversation,
  events: RunEvent[],
  final: RunRecord,
): Difference[] {
  const differences: Difference[] = [];
  // 1. seq contiguous from 1, nothing missing or repeated.
  const gap = events.findIndex((e, i) => e.seq !== i + 1);
  if (gap >= 0 || events.length !== final.last_seq) {
    differences.push({
      position: -1,
      expected: final.last_seq,
      got: events.length,
      source: 'log',
      detail: `seq not contiguous at ${gap + 1}`,
    });
  }
  // 2. the recorded model saw the recording's transcript at every turn.
  const divergence = events.find((e) => e.kind === 'operation_failed' && e.data.error_class === 'divergence');
  if (divergence !== undefined) {
    const d = (
      divergence.data as { detail?: { divergence?: { position: number; expected: unknown; got: unknown } } }
    ).detail?.divergence;
    differences.push({
      position: d?.position ?? -1,
      expected: d?.expected ?? null,
      got: d?.got ?? null,
      source: 'model',
      detail: String(divergence.data.message),
    });
  }
  // 3. the world saw exactly the recorded calls, each executed once (per op_id).
  const stats = world.stats(conversation.key);
  for (const d of stats.divergences) {
    differences.push({
      position: d.position,
      expected: d.expected,
      got: d.got,
      source: 'tool',
      detail:
        d.expected?.output !== undefined
          ? `live output of ${d.got.name} differs from the recording`
          : `unexpected call to ${d.got.name}`,
    });
  }
  const opsPerResult = new Map<string, number>();
  for (const e of events)
    if (e.kind === 'tool_result' && e.operation_id)
      opsPerResult.set(e.operation_id, (opsPerResult.get(e.operation_id) ?? 0) + 1);
  // A read may take a second operation when its first was abandoned (outcome unknown, re-issued);
  // exactly one of them answers the model. A mutating call takes exactly one operation.
  stats.consumedBy.forEach((ops, i) => {
    const call = conversation.toolCalls[i];
    const answered = ops.filter((op) => opsPerResult.get(op) === 1).length;
    const mutating = call !== undefined && MUTATING_TOOLS.has(call.name);
    if (ops.length === 0 || answered !== 1 || (mutating && ops.length !== 1)) {
      differences.push({
        position: call?.position ?? -1,
        expected: 'executed once',
        got: `${ops.length} operations`,
        source: 'tool',
        detail: `recorded call ${call?.name} executed ${ops.length} times`,
      });
    }
  });
  return differences;
}

/** Checks 4 and 5: the transcript equals the recording (and the live world's verdict), the final status, no lease left. */
function outcomeDifferences(
  world: ReplayWorld,
  conversation: ReplayConversation,
  events: RunEvent[],
  final: RunRecord,
  result: ConversationResult,
): Difference[] {
  const differences: Difference[] = [];
  // 4. the final transcript, compiled from the log, equals the recording (an independent check).
  const compiled = compileContext(events, { instructions: conversation.instructions }).messages;
  const transcriptDiff = firstTranscriptDifference(conversation.expectedTranscript, compiled);
  if (transcriptDiff !== null) differences.push(transcriptDiff);
  if (world.assess !== undefined) {
    result.live = world.assess(conversation, compiled);
    // Every recorded mutating call applied exactly once (re-dispatches answered by receipts apart).
    const recordedMutating = conversation.toolCalls.filter((c) => MUTATING_TOOLS.has(c.name)).length;
    if (result.live.mutating_executed !== recordedMutating) {
      differences.push({
        position: -1,
        expected: recordedMutating,
        got: result.live.mutating_executed,
        source: 'tool',
        detail: `${result.live.mutating_executed} mutating operations executed for ${recordedMutating} recorded`,
      });
    }
  }
  // 5. the expected final status, and no lease left.
  if (final.status !== conversation.expectedStatus) {
    differences.push({
      position: -1,
      expected: conversation.expectedStatus,
      got: final.status,
      source: 'status',
      detail: `final status ${final.status}${'terminal_reason' in final ? ` (${final.terminal_reason})` : ''}`,
    });
  }
  if (final.lease !== null)
    differences.push({
      position: -1,
      expected: null,
      got: final.lease,
      source: 'status',
      detail: 'run left holding a lease',
    });
  return differences;
}

async function judge(
  api: ReplayApi,
  world: ReplayWorld,
  conversation: ReplayConversation,
  runId: string,
  result: ConversationResult,
): Promise<void> {
  // An ended run may still owe its reducer the last events (e.g. `stopped`): let that settle.
  let final = await api.getRun(runId);
  for (let i = 0; i < 50 && final.inbox.length > 0; i += 1) {
    await new Promise((r) => setTimeout(r, 200));
    final = await api.getRun(runId);
  }
  const events = await readAll(api, runId);
  if (events.length !== final.last_seq) final = await api.getRun(runId);
  result.status = final.status;
  result.events = events.length;
  result.operations = final.usage.operations;
  if (final.usage.cost !== undefined) result.cost = final.usage.cost;
  result.model_turns = events.filter((e) => e.kind === 'model_turn_completed').length;
  result.tool_calls = events.filter((e) => e.kind === 'tool_result').length;
  result.recoveries = events.filter((e) => e.kind === 'lease_taken_over').length;
  result.outcome_unknown = events.filter(
    (e) => e.kind === 'operation_failed' && e.data.outcome_unknown === true,
  ).length;
  const differences = [
    ...logDifferences(world, conversation, events, final),
    ...outcomeDifferences(world, conversation, events, final, result),
  ];
  differences.sort((a, b) => (a.position < 0 ? 1 : b.position < 0 ? -1 : a.position - b.position));
  result.first_difference = differences[0] ?? null;
  result.identical = differences.length === 0;
}
