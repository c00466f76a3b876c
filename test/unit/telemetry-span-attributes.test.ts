/**
 * What the spans of a run say (lib/telemetry/span-attributes.ts): the run span of each way a run
 * ends, errors as `error.type` codes, and no payload text without capture. Pure: no SDK.
 */
import { describe, expect, it } from 'vitest';
import type { RunRecord, ToolResultEnvelope } from '../../lib/contracts/index.ts';
import { failRun, stopRun } from '../../lib/core/run-machine.ts';
import { runTraceIds } from '../../lib/telemetry/otel.ts';
import { callInfo, operationEnd, runSpan } from '../../lib/telemetry/span-attributes.ts';
import { newRun } from '../support/runs.ts';

function ended(result: { ok: boolean; record?: RunRecord }): RunRecord {
  if (!result.ok || result.record === undefined) throw new Error('the transition was refused');
  return result.record;
}

const failedEnvelope = {
  envelope: 'raisin.tool-result/1',
  operation_id: 'op-1',
  status: 'failed',
  error_class: 'timeout',
  payload: { secret: 'the payload' },
  reads: [],
  writes: [],
  artifact_refs: [],
  evidence: [],
  diagnostics: [],
  suggested_next_actions: [],
  retry_policy: { retryable: true },
} as ToolResultEnvelope;

describe('the run span', () => {
  it('is null for a run that has not ended', () => {
    expect(runSpan(newRun(), false)).toBeNull();
  });

  it('marks a failed run an error whose type is its reason code', () => {
    const failed = ended(failRun(newRun(), 'budget_exceeded:max_turns', 5_000));
    const plan = runSpan(failed, false);
    expect(plan).toMatchObject({
      error: 'budget_exceeded:max_turns',
      startMs: 1_000,
      endMs: 5_000,
      attributes: { 'agent_runs.outcome': 'failed', 'error.type': 'budget_exceeded:max_turns' },
    });
  });

  it("says a stopped run stopped, without the stop's reason (a user's words)", () => {
    const stopped = ended(stopRun(newRun(), 'the customer called back', 2_000));
    const plan = runSpan(stopped, true);
    expect(plan?.attributes).toMatchObject({
      'agent_runs.outcome': 'stopped',
      'agent_runs.terminal_reason': 'stopped',
    });
    expect(plan?.error).toBeUndefined();
    expect(JSON.stringify(plan)).not.toContain('customer');
  });

  it("names a child run's parent, whose run span it links to", () => {
    const child = ended(failRun(newRun({ parent_run_id: 'parent-1' } as never), 'x', 2_000));
    expect(child.parent_run_id).toBe('parent-1');
    expect(runSpan(child, false)).toMatchObject({
      parentRunId: 'parent-1',
      attributes: { 'agent_runs.parent_run_id': 'parent-1' },
    });
  });
});

describe('an operation span', () => {
  it('ends a failed tool call with its error class, and no payload without capture', () => {
    const end = operationEnd({ kind: 'tool_result', envelope: failedEnvelope }, false);
    expect(end).toEqual({
      attributes: { 'agent_runs.outcome': 'failed', 'error.type': 'timeout' },
      error: 'timeout',
    });
    const captured = operationEnd({ kind: 'tool_result', envelope: failedEnvelope }, true);
    expect(captured.attributes['gen_ai.tool.call.result']).toBe('{"secret":"the payload"}');
  });

  it('ends a failed model turn with its error class and the tokens it used', () => {
    const end = operationEnd(
      {
        kind: 'operation_failed',
        error_class: 'rate_limited',
        retryable: true,
        outcome_unknown: false,
        message: 'slow down',
        usage: { input_tokens: 7, output_tokens: 0 },
      },
      false,
    );
    expect(end.error).toBe('rate_limited');
    expect(end.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 7, 'error.type': 'rate_limited' });
    expect(JSON.stringify(end)).not.toContain('slow down');
  });

  it("reads the model host's call info, ignoring fields of another shape", () => {
    expect(callInfo({ call: { provider: 'bedrock', model_id: 'm', response_id: 42 } })).toEqual({
      provider: 'bedrock',
      model_id: 'm',
    });
    expect(callInfo({ call: 'bedrock' })).toBeUndefined();
    expect(callInfo({})).toBeUndefined();
  });
});

describe('runTraceIds', () => {
  it('derives the same ids from the same run id, and other ids from another', () => {
    const ids = runTraceIds('run-1');
    expect(ids.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(ids.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(runTraceIds('run-1')).toEqual(ids);
    expect(runTraceIds('run-2').traceId).not.toBe(ids.traceId);
  });
});
