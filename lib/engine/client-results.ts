/**
 * What a client reports, parsed: a request body by its schema (400 validation_failed naming the
 * issues), and an operation's result, a tool answer through the one normalizer, with the resume
 * keys a client may not wait on refused. docs/guides/client-driven.md.
 */
import { ClientOperationResult, ResumeKeyParams } from '../contracts/index.ts';
import type { OperationResult } from '../core/run-machine.ts';
import { normalizeToolResult } from '../core/tool-result-validation.ts';
import { EngineError } from './errors.ts';

/** `raw` parsed by `schema`; throws EngineError validation_failed (`invalid {what}`) with the issues. */
export function parse<T>(
  schema: {
    safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: unknown[] } };
  },
  raw: unknown,
  what: string,
): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new EngineError('validation_failed', `invalid ${what}`, { issues: parsed.error.issues });
  return parsed.data;
}

/**
 * Why a client may not wait on `key`, or null: one POST /results could not name (ResumeKeyParams),
 * or one of the runtime's own (`child:{run_id}`, and `callback:` but this operation's own).
 */
function clientKeyRefusal(key: string | undefined, opId: string): { code: string; message: string } | null {
  if (key === undefined) return null;
  const parsed = ResumeKeyParams.safeParse({ resume_key: key });
  if (!parsed.success)
    return { code: 'invalid_resume_key', message: `resume_key: ${parsed.error.issues[0]?.message}` };
  if (key.startsWith('child:') || (key.startsWith('callback:') && key !== `callback:${opId}`))
    return {
      code: 'reserved_resume_key',
      message: `resume_key ${JSON.stringify(key)} is the runtime's own (child:, callback:)`,
    };
  return null;
}

/** The core result of a reported `result`; a tool answer goes through the one normalizer. */
export function resultOf(raw: unknown, opId: string): OperationResult {
  const result = parse(ClientOperationResult, raw, 'result');
  if (result.kind !== 'tool_result') return result as OperationResult;
  const { envelope, refusal: refused } = normalizeToolResult(result.envelope, opId);
  if (refused !== undefined) {
    throw new EngineError('validation_failed', `invalid result: ${refused.message}`, {
      issues: [
        {
          path: ['result', 'envelope', ...(refused.path === '' ? [] : refused.path.split('.'))],
          code: refused.code,
          message: refused.message,
        },
      ],
    });
  }
  const refusedKey = envelope.status === 'waiting' ? clientKeyRefusal(envelope.resume_key, opId) : null;
  if (refusedKey !== null)
    throw new EngineError('validation_failed', `invalid result: ${refusedKey.message}`, {
      issues: [{ path: ['result', 'envelope', 'resume_key'], ...refusedKey }],
    });
  return { kind: 'tool_result', envelope };
}
