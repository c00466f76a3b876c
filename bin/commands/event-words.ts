/**
 * The prose of an event line in `agent-runs events` (and `watch`): what the event says, in a few
 * words, read defensively from its data (an event of another shape gets no words, and its line
 * shows its JSON instead). `--json` prints the events as the API returns them. The kinds not
 * worded here get the console timeline's words (console/src/model/events.ts describeEvent).
 * docs/reference/storage.md lists the kinds and their data.
 */
import { describeEvent, effectWords } from '../../console/src/model/events.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** An operation's kind in words (lib/contracts/run.ts OPERATION_KINDS; others `_` read as spaces). */
const operationWords = (kind: string): string => kind.replaceAll('_', ' ');

/**
 * The words of `event`, or '' when there are none: `answered event #1: asks for a model turn`,
 * `echo succeeded`, `model turn, attempt 1`, `tool call echo, attempt 2`; other kinds as the
 * console says them.
 */
export function eventWords(event: RunEvent): string {
  const d = (event.data ?? {}) as Record<string, unknown>;
  switch (event.kind) {
    case 'reducer_answered': {
      const seq = num(d.event_seq);
      if (seq === undefined || !Array.isArray(d.effects)) return '';
      const asks = (d.effects as { kind?: unknown }[]).map((e) => effectWords(str(e?.kind) ?? '?'));
      return `answered event #${seq}${asks.length === 0 ? ' with no new steps' : `: ${asks.join(', ')}`}`;
    }
    case 'tool_result': {
      const tool = str(d.tool);
      const envelope = d.envelope as Record<string, unknown> | undefined;
      const status = str(envelope?.status);
      if (tool === undefined || status === undefined) return '';
      const errorClass = str(envelope?.error_class);
      const legacy = envelope?.legacy === true ? ' (not in the standard result shape: wrapped)' : '';
      return `${tool} ${status}${errorClass === undefined ? '' : ` (${errorClass})`}${legacy}`;
    }
    case 'operation_started': {
      const kind = str(d.kind);
      if (kind === undefined) return '';
      const tool = str(d.tool);
      const attempt = num(d.attempt);
      return `${operationWords(kind)}${tool === undefined ? '' : ` ${tool}`}${attempt === undefined ? '' : `, attempt ${attempt}`}`;
    }
    default:
      try {
        return describeEvent(event);
      } catch {
        return '';
      }
  }
}
