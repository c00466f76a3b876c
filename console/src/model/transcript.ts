/**
 * The run as a conversation, read from its event log: what the user said (the input, steers,
 * answers), what the model said and which tools it called, each tool's envelope, and the
 * moments that changed the run (approvals, failures, the end). Pure: events in, entries out,
 * in seq order. A turn run by the client's own runtime and reported as a turn outcome carries
 * that outcome (`outcome`), since its model text and calls are not in the log. A tool result the
 * runtime wrapped (`legacy`) is marked only where that hides something: writes or evidence it
 * claimed. docs/contracts/tool-result.md, "The tool-result envelope"; docs/contracts/turn-outcome.md.
 */
import {
  ModelTurnCompletedData,
  RequestResolvedData,
  type RunEvent,
  type ToolCall,
  ToolResultData,
  type ToolResultEnvelope,
  TurnOutcomeFields,
} from '../../../lib/contracts/index.ts';
import { reasonText } from './words.ts';

/** A turn outcome as a model turn or tool result records it (`data.turn_outcome`), in words. */
export interface OutcomeWords {
  /** `completed: completed`, `failed: provider-unavailable`. */
  status: string;
  /** `product prod-1` when the turn produced one. */
  product?: string;
  /** How its tokens were counted: `as the provider counted them`, ... */
  usage: string;
  /** Who decided the outcome (`selected/by`). */
  by: string;
}

const FIDELITY: Record<string, string> = {
  authoritative: 'as the provider counted them',
  'host-measured': 'as the host measured them',
  estimated: 'estimated',
  unavailable: 'not known',
};

const StoredOutcome = TurnOutcomeFields.omit({ schema: true });

/** The words of a recorded turn outcome, or undefined when the event has none (or another shape). */
export function outcomeWords(recorded: unknown): OutcomeWords | undefined {
  const parsed = StoredOutcome.safeParse(recorded);
  if (!parsed.success) return undefined;
  const o = parsed.data;
  return {
    status: `${o.status}: ${o['reason/code']}`,
    ...(o['product/ref'] !== undefined ? { product: `product ${o['product/ref']}` } : {}),
    usage: FIDELITY[o['usage/fidelity']] ?? o['usage/fidelity'],
    by: o['selected/by'],
  };
}

/** Whether a tool card should say the runtime wrapped the result: only when it claimed writes or evidence. */
export function legacyMatters(envelope: ToolResultEnvelope): boolean {
  return envelope.legacy === true && (envelope.writes.length > 0 || envelope.evidence.length > 0);
}

export type TranscriptEntry =
  | { kind: 'user'; seq: number; via: 'input' | 'steer' | 'answer'; content: unknown }
  | {
      kind: 'assistant';
      seq: number;
      text: string | null;
      toolCalls: ToolCall[];
      finishReason: string;
      tokens: { input: number; output: number };
      outcome?: OutcomeWords;
    }
  | {
      kind: 'tool';
      seq: number;
      tool: string;
      callId?: string;
      /** The operation that ran the tool (the event's operation_id), not the model turn that asked. */
      opId?: string;
      envelope: ToolResultEnvelope;
      outcome?: OutcomeWords;
    }
  | { kind: 'approval'; seq: number; requestId: string; summary: string; digest: string; changes?: unknown }
  | { kind: 'decision'; seq: number; requestId: string; decision: 'approved' | 'rejected'; reason?: string }
  | { kind: 'notice'; seq: number; tone: 'bad' | 'good' | 'attention'; text: string };

const FINISH_WORDS: Record<string, string> = {
  stop: 'finished',
  tool_calls: 'asked for tools',
  length: 'cut off at its length limit',
  content_filter: "stopped by the provider's content filter",
  error: 'ended in an error',
};

/**
 * Why the model's turn ended, in plain words (`tool_calls` → `asked for tools`, `stop` →
 * `finished`); another reason is shown as the provider gave it, underscores as spaces.
 */
export function finishText(reason: string): string {
  return FINISH_WORDS[reason] ?? reason.replaceAll('_', ' ');
}

const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** The transcript of `events` (any order; read in seq order). Events it does not show are skipped. */
export function transcriptOf(events: readonly RunEvent[]): TranscriptEntry[] {
  const out: TranscriptEntry[] = [];
  for (const e of [...events].sort((a, b) => a.seq - b.seq)) {
    const d = e.data;
    switch (e.kind) {
      case 'run_started':
        if (d.input !== undefined && d.input !== null) {
          out.push({ kind: 'user', seq: e.seq, via: 'input', content: d.input });
        }
        break;
      case 'steer_consumed':
        out.push({ kind: 'user', seq: e.seq, via: 'steer', content: d.input });
        break;
      case 'model_turn_completed': {
        const turn = ModelTurnCompletedData.safeParse(d);
        if (!turn.success) break;
        const outcome = outcomeWords(d.turn_outcome);
        out.push({
          kind: 'assistant',
          seq: e.seq,
          text: turn.data.message.text ?? null,
          toolCalls: turn.data.tool_calls,
          finishReason: turn.data.finish_reason,
          tokens: { input: turn.data.usage.input_tokens, output: turn.data.usage.output_tokens },
          ...(outcome !== undefined ? { outcome } : {}),
        });
        break;
      }
      case 'tool_result': {
        const result = ToolResultData.safeParse(d);
        if (!result.success) break;
        const outcome = outcomeWords(d.turn_outcome);
        out.push({
          kind: 'tool',
          seq: e.seq,
          tool: result.data.tool,
          ...(result.data.call_id !== undefined ? { callId: result.data.call_id } : {}),
          ...(e.operation_id !== undefined ? { opId: e.operation_id } : {}),
          envelope: result.data.envelope,
          ...(outcome !== undefined ? { outcome } : {}),
        });
        break;
      }
      case 'request_opened': {
        if (d.kind !== 'approval') break;
        const subject = (d.subject ?? {}) as { summary?: unknown; digest?: unknown; changes?: unknown };
        out.push({
          kind: 'approval',
          seq: e.seq,
          requestId: String(d.request_id),
          summary: text(subject.summary ?? ''),
          digest: text(subject.digest ?? ''),
          ...(subject.changes !== undefined ? { changes: subject.changes } : {}),
        });
        break;
      }
      case 'request_resolved': {
        const resolved = RequestResolvedData.safeParse(d);
        if (!resolved.success) break;
        if (resolved.data.kind === 'input') {
          out.push({ kind: 'user', seq: e.seq, via: 'answer', content: resolved.data.value });
        } else {
          out.push({
            kind: 'decision',
            seq: e.seq,
            requestId: resolved.data.request_id,
            decision: resolved.data.decision ?? 'approved',
            ...(resolved.data.reason !== undefined ? { reason: resolved.data.reason } : {}),
          });
        }
        break;
      }
      case 'operation_failed':
        out.push({ kind: 'notice', seq: e.seq, tone: 'bad', text: `Operation failed: ${text(d.message)}` });
        break;
      case 'budget_exceeded':
        out.push({
          kind: 'notice',
          seq: e.seq,
          tone: 'attention',
          text: `Budget ${text(d.which)} reached (${text(d.used)} of ${text(d.limit)})`,
        });
        break;
      case 'run_completed':
        out.push({
          kind: 'notice',
          seq: e.seq,
          tone: 'good',
          text: `Completed (${text(d.outcome)})${typeof d.summary === 'string' ? `: ${d.summary}` : ''}`,
        });
        break;
      case 'run_failed':
        out.push({ kind: 'notice', seq: e.seq, tone: 'bad', text: `Failed: ${text(d.code)}` });
        break;
      case 'stopped':
        out.push({
          kind: 'notice',
          seq: e.seq,
          tone: 'bad',
          text: `Stopped: ${typeof d.reason === 'string' ? reasonText(d.reason) : text(d.reason)}`,
        });
        break;
      default:
        break;
    }
  }
  return out;
}
