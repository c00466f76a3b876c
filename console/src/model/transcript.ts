/**
 * The run as a conversation, read from its event log: what the user said (the input, steers,
 * answers), what the model said and which tools it called, each tool's envelope, and the
 * moments that changed the run (approvals, failures, the end). Pure: events in, entries out,
 * in seq order. docs/contracts/tool-result.md, "The tool-result envelope".
 */
import {
  ModelTurnCompletedData,
  RequestResolvedData,
  type RunEvent,
  type ToolCall,
  ToolResultData,
  type ToolResultEnvelope,
} from '../../../lib/contracts/index.ts';

export type TranscriptEntry =
  | { kind: 'user'; seq: number; via: 'input' | 'steer' | 'answer'; content: unknown }
  | {
      kind: 'assistant';
      seq: number;
      text: string | null;
      toolCalls: ToolCall[];
      finishReason: string;
      tokens: number;
    }
  | { kind: 'tool'; seq: number; tool: string; callId?: string; envelope: ToolResultEnvelope }
  | { kind: 'approval'; seq: number; requestId: string; summary: string; digest: string; changes?: unknown }
  | { kind: 'decision'; seq: number; requestId: string; decision: 'approved' | 'rejected'; reason?: string }
  | { kind: 'notice'; seq: number; tone: 'bad' | 'good' | 'attention'; text: string };

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
        out.push({
          kind: 'assistant',
          seq: e.seq,
          text: turn.data.message.text ?? null,
          toolCalls: turn.data.tool_calls,
          finishReason: turn.data.finish_reason,
          tokens: turn.data.usage.input_tokens + turn.data.usage.output_tokens,
        });
        break;
      }
      case 'tool_result': {
        const result = ToolResultData.safeParse(d);
        if (!result.success) break;
        out.push({
          kind: 'tool',
          seq: e.seq,
          tool: result.data.tool,
          ...(result.data.call_id !== undefined ? { callId: result.data.call_id } : {}),
          envelope: result.data.envelope,
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
        out.push({ kind: 'notice', seq: e.seq, tone: 'bad', text: `Stopped: ${text(d.reason)}` });
        break;
      default:
        break;
    }
  }
  return out;
}
