/**
 * A tool call's approval as the run shows it: the subject an approver reads and quotes (kind
 * `tool_call`, the tool, its args and the model's call id as `changes`, the digest of those over
 * RFC 8785 canonical JSON), and whether a call needs one (the AI SDK tool's `needsApproval`, a
 * boolean or a function of the input, or the tool named in `durableTools`' `needsApproval`).
 * docs/contracts/run-lifecycle.md, "Controls" (approve: an approval is bound to the digest of its
 * subject).
 */
import type { ApprovalSubject, JsonObject } from '../contracts/index.ts';
import { TOOL_CALL_SUBJECT } from './journal.ts';

/** The longest summary an approval shows (chars): the tool and its args, cut. */
const SUMMARY_CHARS = 500;

/** JSON with object keys sorted: RFC 8785 for JSON values (ES number and string forms, UTF-16 key order). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The approval subject of one tool call: what `agent-runs approve RUN REQ --digest D` quotes. */
export async function approvalSubject(
  tool: string,
  args: JsonObject,
  callId: string,
): Promise<ApprovalSubject> {
  const changes = { tool, args, call_id: callId };
  const summary = `${tool} ${JSON.stringify(args)}`;
  return {
    kind: TOOL_CALL_SUBJECT,
    digest: await sha256Hex(canonical(changes)),
    digest_alg: 'sha256:rfc8785',
    summary: summary.length > SUMMARY_CHARS ? `${summary.slice(0, SUMMARY_CHARS - 1)}…` : summary,
    changes,
  };
}

/** What an AI SDK tool's `needsApproval` function is given besides the input. */
export interface ApprovalQuery {
  toolCallId: string;
  messages: unknown[];
  context?: unknown;
}

/** An AI SDK tool's approval flag: a boolean, or a function of the input (awaited). */
type NeedsApproval = boolean | ((input: never, options: never) => unknown) | undefined;

/** Whether a call of a tool needs an approval: `listed` (named in durableTools' options), else the tool's own flag. */
export async function needsApproval(
  flag: NeedsApproval,
  listed: boolean,
  input: unknown,
  query: ApprovalQuery,
): Promise<boolean> {
  if (listed) return true;
  if (typeof flag === 'function') return Boolean(await flag(input as never, query as never));
  return flag === true;
}
