/**
 * The tool wrapper of a durable agent: each call of a tool's `execute` is one `tool_call`
 * operation of the run, its output recorded (a raisin.tool-result/1 envelope, the output as its
 * `payload`) before the agent sees it. A call the run recorded is answered from the record
 * without running the tool. A tool not marked replay-safe that a dead process started is never
 * run again: the run recorded it `outcome_unknown`, and the agent sees DurableAgentError
 * `outcome_unknown` as the tool's error (the AI SDK hands it to the model as a tool error).
 * A tool that needs an approval (its AI SDK `needsApproval`, or listed in `needsApproval` here)
 * waits for one in the run before its operation begins: an approval request the console, the
 * CLI (`agent-runs approve`) and `watch` can decide; a rejected call is not run and the agent
 * sees DurableAgentError `approval_denied` as the tool's error. The AI SDK's own approval stop
 * is taken off the wrapped tool (the run holds the wait instead).
 * docs/contracts/run-lifecycle.md, "Operations", "Leases, recovery and the sweeper", "Controls"
 * (approve); docs/contracts/tool-result.md.
 */
import type { ToolSet } from 'ai';
import { type ClientOperationResult, type JsonObject, TOOL_RESULT_ENVELOPE } from '../contracts/index.ts';
import { approvalSubject, needsApproval } from './approval.ts';
import { DurableAgentError } from './errors.ts';
import type { ApprovalDecision, RecordedResult } from './journal.ts';
import type { OperationRunner } from './operation-runner.ts';

/** How `durableTools` treats the tools: which ones may run again after a crash. */
export interface DurableToolsOptions<Name extends string> {
  /**
   * The tools that may run twice with the same input (reads, idempotent writes): one in flight
   * when the process died runs again after the restart. Every other tool is not replay-safe
   * (the default): it runs at most once, and its outcome is `outcome_unknown` after such a crash.
   */
  replaySafe?: readonly Name[];
  /**
   * The tools whose every call waits for an approval in the run (as if the tool's own
   * `needsApproval` were true; a tool's `needsApproval` function still decides per call).
   */
  needsApproval?: readonly Name[];
}

/** The error a call of `tool` that was not approved throws (the tool did not run). */
function denied(decision: ApprovalDecision, tool: string, runId: string, callId: string): DurableAgentError {
  const why = decision.decision === 'rejected' ? 'was denied' : 'was not approved (its request closed)';
  return new DurableAgentError(
    'approval_denied',
    `the call of ${tool} ${why}${decision.reason ? `: ${decision.reason}` : ''}; it was not run`,
    { runId, tool, call_id: callId, decision: decision.decision },
  );
}

/** A value as JSON (undefined as null): what the run records and what the agent gets back. */
function asJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

/** The last value of a tool's output (a streaming tool yields several; the last is final). */
async function finalOutput(output: unknown): Promise<unknown> {
  if (output !== null && typeof output === 'object' && Symbol.asyncIterator in output) {
    let last: unknown;
    for await (const part of output as AsyncIterable<unknown>) last = part;
    return last;
  }
  return await output;
}

/** What the agent sees of a recorded tool call: its output, or the recorded failure thrown. */
function toolOutput(result: RecordedResult, tool: string, runId: string): unknown {
  if (result.kind === 'tool_result') {
    const { envelope } = result.data;
    if (envelope.status === 'succeeded') return envelope.payload ?? null;
    throw new DurableAgentError('tool_failed', `the tool ${tool} ended ${envelope.status}`, { runId, tool });
  }
  if (result.kind === 'operation_failed') {
    if (result.data.outcome_unknown)
      throw new DurableAgentError(
        'outcome_unknown',
        `the tool ${tool} was started by a process that died before its result was recorded; ` +
          'it was not run again, and whether it took effect is unknown',
        { runId, tool },
      );
    throw new DurableAgentError('tool_failed', result.data.message, { runId, tool });
  }
  throw new DurableAgentError('replay_mismatch', `a tool call was recorded as ${result.kind}`, {
    runId,
    tool,
  });
}

/**
 * The tools with each `execute` run as an operation of whichever run `active()` names
 * (DurableAgentError `not_running` outside `DurableAgent.run`). Tools without `execute` are
 * kept as they are. A tool's input is recorded as the call's args (an input that is no JSON
 * object under the key `input`); its output must be JSON (a Date becomes its string, a Map {}).
 */
export function durableTools<T extends ToolSet>(
  active: () => { runner: OperationRunner; runId: string },
  tools: T,
  options: DurableToolsOptions<Extract<keyof T, string>> = {},
): T {
  const safe = new Set<string>(options.replaySafe ?? []);
  const approved = new Set<string>(options.needsApproval ?? []);
  const wrapped: Record<string, unknown> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const execute = tool.execute;
    if (execute === undefined) {
      wrapped[name] = tool;
      continue;
    }
    const replaySafe = safe.has(name);
    const { needsApproval: flag, ...rest } = tool;
    wrapped[name] = {
      ...rest,
      execute: async (input: unknown, callOptions: Parameters<typeof execute>[1]) => {
        const { runner, runId } = active();
        const args = asJson(input);
        const request = {
          tool: name,
          args: (args !== null && typeof args === 'object' && !Array.isArray(args)
            ? args
            : { input: args }) as JsonObject,
          mutating: !replaySafe,
          call_id: callOptions.toolCallId,
        };
        const query = {
          toolCallId: callOptions.toolCallId,
          messages: callOptions.messages,
          context: (callOptions as { context?: unknown }).context,
        };
        if (await needsApproval(flag, approved.has(name), input, query)) {
          const subject = await approvalSubject(name, request.args, request.call_id);
          const decision = await runner.approval({ tool: name, callId: request.call_id, subject });
          if (decision.decision !== 'approved') throw denied(decision, name, runId, request.call_id);
        }
        const performed = await runner.perform(
          {
            kind: 'tool_call',
            tool: name,
            begin: { kind: 'tool_call', replay_safe: replaySafe, interruptible: replaySafe, request },
          },
          async (signal): Promise<ClientOperationResult> => {
            const abortSignal = callOptions.abortSignal
              ? AbortSignal.any([callOptions.abortSignal, signal])
              : signal;
            try {
              const output = await finalOutput(execute(input as never, { ...callOptions, abortSignal }));
              return {
                kind: 'tool_result',
                envelope: { envelope: TOOL_RESULT_ENVELOPE, status: 'succeeded', payload: asJson(output) },
              };
            } catch (err) {
              if (signal.aborted) throw err;
              const message = err instanceof Error ? err.message : String(err);
              return {
                kind: 'operation_failed',
                error_class: 'tool_error',
                retryable: false,
                outcome_unknown: false,
                message,
              };
            }
          },
        );
        return toolOutput(performed.result, name, runId);
      },
    };
  }
  return wrapped as T;
}
