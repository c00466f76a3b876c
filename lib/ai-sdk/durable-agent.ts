/**
 * `durableAgent`: an unchanged Vercel AI SDK agent (`generateText` / `streamText` with tools)
 * made durable on an Agent Runs client-driven run. The run is found again by the caller's key
 * (the run's `create_key`): a process that restarts after a crash resumes the same run, waits
 * out the dead process's lease, replays every recorded model turn and tool call without calling
 * the provider or the tool again, and goes on live from the first operation the run did not
 * record. docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases,
 * recovery and the sweeper", "Operations", "Budgets", "Controls" (steer).
 */
import { APICallError, type LanguageModelMiddleware, RetryError, type ToolSet } from 'ai';
import {
  type AgentRunsClient,
  ApiError,
  type CreateRunInput,
  type DriveSession,
  drive,
  type RunEvent,
  type RunRecord,
} from '../client/index.ts';
import { isTerminalStatus } from '../contracts/index.ts';
import { type ActiveRun, durableMiddleware } from './durable-model.ts';
import { type DurableToolsOptions, durableTools } from './durable-tools.ts';
import { DurableAgentError } from './errors.ts';
import { journalOf } from './journal.ts';
import { SteerInsertions } from './model-turn.ts';
import { OperationRunner } from './operation-runner.ts';

/** How a durable agent finds its run and holds it. */
export interface DurableAgentOptions {
  /** The typed client of the Agent Runs API (`createClient` of `@agent-runs/client`). */
  client: AgentRunsClient;
  /**
   * The key the run is found by (its `create_key`, 1..256 chars): the same key and the same
   * `run` resume the same run; the same key with another `run` is ApiError `create_key_reused`.
   */
  key: string;
  /** The run to create the first time: subject, input, budgets, ... (no reducer: it is client-driven). */
  run: Omit<CreateRunInput, 'reducer' | 'create_key'>;
  /** The lease owner name; unique per process (default `ai-sdk-{uuid}`): never reuse a dead process's name. */
  owner?: string;
  /** Lease length asked for (ms, default 30 000): how long a restart waits at most for a dead process's lease. */
  ttlMs?: number;
  /** How long `run` waits for another holder's lease to expire (ms, default ttlMs × 3). */
  leaseWaitMs?: number;
}

/** What the agent function is given: the run it is part of. */
export interface DurableAgentContext {
  /** The run's id. */
  readonly runId: string;
}

/** How a durable run ended for this process. */
export interface DurableAgentResult<T> {
  /** What the agent function returned. */
  value: T;
  /** The run's id (the same across restarts for one key). */
  runId: string;
  /** The run as last seen (`completed` once the agent returned). */
  run: RunRecord;
  /** How many model turns and tool calls this process answered from the record instead of running them. */
  replayed: { model_turns: number; tool_calls: number };
}

/** A durable agent: its middleware and tool wrapper, and `run`, which drives the run around the agent. */
export interface DurableAgent {
  /** The middleware for `wrapLanguageModel({ model, middleware })`: each model call is one operation. */
  readonly middleware: LanguageModelMiddleware;
  /** The tools with each call one operation; tools not listed in `replaySafe` run at most once. */
  tools<T extends ToolSet>(tools: T, options?: DurableToolsOptions<Extract<keyof T, string>>): T;
  /**
   * Resumes (or creates) the run and runs `agent` on it: the run is `completed` (summary: the
   * value's `text` when it has one) once `agent` returns. Throws DurableAgentError
   * `budget_exceeded` (the run paused or failed at a budget), `run_stopped`, `replay_mismatch`,
   * `run_terminal`; ApiError `lease_held` when another holder kept the lease past `leaseWaitMs`,
   * and ApiError of the API (`create_key_reused`, `invalid_state` for a paused run, ...). A
   * throw of `agent` itself fails the run (code `agent_error`) and is rethrown, unless it may
   * pass (a retryable ApiError, an AI SDK RetryError or retryable APICallError): the run is then
   * left queued for a restart.
   */
  run<T>(agent: (context: DurableAgentContext) => Promise<T>): Promise<DurableAgentResult<T>>;
}

/** Every event of a run, in seq order. */
async function allEvents(client: AgentRunsClient, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  let after = 0;
  for (;;) {
    const page = await client.listRunEvents(runId, { after, limit: 1000 });
    events.push(...page.events);
    if (page.events.length === 0 || page.next_after >= page.last_seq) return events;
    after = page.next_after;
  }
}

/**
 * Whether the agent's error may pass (the API or the provider unreachable for a while, AI SDK
 * retries exhausted): the run is then left for a restart (lease released) rather than failed.
 */
function isTransient(err: unknown): boolean {
  if (err instanceof ApiError) return err.retryable;
  return RetryError.isInstance(err) || (APICallError.isInstance(err) && err.isRetryable);
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** The summary a run completes with: the value's `text` (at most 10 000 chars), when it has one. */
function summaryOf(value: unknown): string | undefined {
  const text = (value as { text?: unknown } | null)?.text;
  return typeof text === 'string' && text.length > 0 ? text.slice(0, 10_000) : undefined;
}

/**
 * Makes an AI SDK agent durable on a client-driven run found by `options.key`. Add the
 * middleware to the model, wrap the tools, and call the agent inside `run`:
 *
 * ```ts
 * const durable = durableAgent({ client, key: 'refund-42', run: { subject, input: prompt } });
 * const { value } = await durable.run(() =>
 *   generateText({
 *     model: wrapLanguageModel({ model, middleware: durable.middleware }),
 *     tools: durable.tools({ lookupOrder, issueRefund }, { replaySafe: ['lookupOrder'] }),
 *     prompt,
 *     stopWhen: stepCountIs(5),
 *   }),
 * );
 * ```
 *
 * The agent must be deterministic given the recorded results (the same prompt, tools and
 * options on every restart); otherwise `replay_mismatch`. One `run` at a time per instance.
 */
export function durableAgent(options: DurableAgentOptions): DurableAgent {
  const { client } = options;
  const ttlMs = options.ttlMs ?? 30_000;
  const owner = options.owner ?? `ai-sdk-${globalThis.crypto.randomUUID()}`;
  let current: { run: ActiveRun; runId: string } | null = null;
  const active = () => {
    if (current === null)
      throw new DurableAgentError('not_running', 'the model or a tool was called outside DurableAgent.run');
    return current;
  };

  /** Runs `agent` over the run's journal, live on `session` (null: the run ended, replay only). */
  async function execute<T>(
    runId: string,
    session: DriveSession | null,
    agent: (c: DurableAgentContext) => Promise<T>,
  ) {
    if (current !== null) throw new Error('durableAgent: one run at a time per instance');
    const runner = new OperationRunner(client, runId, journalOf(await allEvents(client, runId)), session);
    if (current !== null) throw new Error('durableAgent: one run at a time per instance');
    current = { run: { runner, steers: new SteerInsertions() }, runId };
    let value: T;
    try {
      value = await agent({ runId });
    } catch (err) {
      if (runner.halted !== null) throw runner.halted;
      if (session !== null && !session.signal.aborted && !isTransient(err)) {
        try {
          await session.fail('agent_error');
        } catch (failure) {
          throw new AggregateError([err, failure], 'the agent threw, and failing its run failed too');
        }
      }
      throw err;
    } finally {
      current = null;
    }
    // The agent may have swallowed it (a tool's error the model saw).
    if (runner.halted !== null) throw runner.halted;
    const run = session === null ? await client.getRun(runId) : await session.complete(summaryOf(value));
    return { value, runId, run, replayed: { ...runner.replayed } };
  }

  return {
    middleware: durableMiddleware(active),
    tools: (tools, toolOptions) =>
      durableTools(
        () => {
          const { run, runId } = active();
          return { runner: run.runner, runId };
        },
        tools,
        toolOptions,
      ),
    async run(agent) {
      const { run } = await client.createRun({ ...options.run, reducer: null, create_key: options.key });
      const runId = run.run_id;
      if (isTerminalStatus(run.status)) return execute(runId, null, agent);
      const deadline = Date.now() + (options.leaseWaitMs ?? ttlMs * 3);
      for (;;) {
        let entered = false;
        try {
          const driven = await drive(
            client,
            runId,
            (session) => {
              entered = true;
              return execute(runId, session, agent);
            },
            { owner, ttlMs },
          );
          if (driven.value === undefined)
            throw new DurableAgentError('run_stopped', 'the run stopped', { runId });
          return driven.value;
        } catch (err) {
          const held = !entered && err instanceof ApiError && err.code === 'lease_held';
          if (!held || Date.now() >= deadline) throw err;
          // A dead process's lease: wait until it expires (the take then lets it go).
          const expiresAt = Number(err.details.expires_at ?? Date.now() + 1_000);
          await sleep(Math.max(100, Math.min(expiresAt - Date.now() + 100, deadline - Date.now())));
        }
      }
    },
  };
}
