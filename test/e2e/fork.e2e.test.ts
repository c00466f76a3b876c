/**
 * Forking over HTTP against the local stack, as a user of `npm start` would: the default agent
 * reducer (the built-in artifact in QuickJS) runs a task whose model answers follow from what
 * it reads (a scripted model-turn function); a budget pauses it at checkpoint 1, a resume lets
 * it finish. `POST /runs/{id}/fork` of checkpoint 1 makes the original's answers again after the
 * checkpoint; a fork with an edited state (through the CLI, `agent-runs fork RUN --checkpoint 1
 * --state @file`) diverges from it. The original is not changed; `GET /runs/{id}/state?rev=`
 * reads the checkpoint's state; the fork's log starts with a run_started naming its origin.
 * docs/contracts/run-lifecycle.md, "Checkpoints".
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_HTTP_COMMANDS } from '../../bin/commands/http-commands.ts';
import { runCli } from '../../bin/commands/program.ts';
import { type AgentRunsClient, type ApiError, createClient } from '../../lib/client/index.ts';
import {
  type CompiledContext,
  DEFAULT_MODEL_TURN_FUNCTION,
  type ModelTurnOutput,
  type RunEvent,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { untilRun } from '../support/http-runs.ts';

let stack: LocalStack;
let client: AgentRunsClient;

/** Three lookups, then an answer; every answer carries the instructions the model was given. */
async function model(_input: unknown, context: CompiledContext): Promise<ModelTurnOutput> {
  const system = context.messages[0]?.role === 'system' ? context.messages[0].content : '';
  const done = context.messages.filter((m) => m.role === 'assistant').length;
  const usage = { input_tokens: 10, output_tokens: 2 };
  if (done < 3) {
    return {
      message: { text: `step ${done + 1}` },
      tool_calls: [{ call_id: `c${done + 1}`, name: 'lookup', args: { item: done + 1, mood: system } }],
      finish_reason: 'tool_calls',
      usage,
    };
  }
  return { message: { text: `done (${system})` }, tool_calls: [], finish_reason: 'stop', usage };
}

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    heartbeatMs: 300,
    sweepIntervalMs: 1_000,
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: (input, context) => model(input, context) },
    registerTools(registry) {
      registry.register({
        name: 'lookup',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true },
        handler: { kind: 'module', fn: async (args) => ({ item: args.item, mood: args.mood }) },
      });
    },
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const subject = () => ({ workspace: 'e2e', path: `/fork/${randomUUID()}` });
const until = (runId: string, done: (run: RunRecord) => boolean) => untilRun(client, runId, done, 30_000);
const ended = (r: RunRecord) => r.status === 'completed' || r.status === 'failed';

async function allEvents(runId: string): Promise<RunEvent[]> {
  return (await client.events(runId, { after: 0, limit: 1000 })).events;
}
/** The model's answers after `seq` (without the context manifest, whose seqs differ on a fork). */
const answersAfter = (events: RunEvent[], seq: number) =>
  events
    .filter((e) => e.kind === 'model_turn_completed' && e.seq > seq)
    .map(({ data: { manifest: _manifest, ...answer } }) => answer);

describe('forking a run from a checkpoint over the local stack', () => {
  it('reproduces the original answers up to and after the checkpoint, and diverges after an edited state', async () => {
    const { run } = await client.createRun({
      subject: subject(),
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'look three items up',
      context: { mode: 'task', instructions: 'calm', tools: [{ name: 'lookup', mutating: false }] },
      budgets: { max_turns: 2 },
    });
    await until(run.run_id, (r) => r.status === 'paused');
    const checkpoint = await client.checkpoint(run.run_id, 1);
    expect(checkpoint).toMatchObject({
      n: 1,
      reason: 'paused',
      core: { status: 'paused', operation: { kind: 'model_turn' } },
      children: { live: [], started: 0 },
      mailbox: { resume_keys: [] },
      large_results: [],
    });
    const state = await client.state(run.run_id, { rev: checkpoint.state_rev });
    expect(state).toMatchObject({
      run_id: run.run_id,
      state_rev: checkpoint.state_rev,
    });
    expect(state).not.toHaveProperty('state_at');
    await client.resume(run.run_id, { budget_increase: { max_turns: 5 } });
    const original = await until(run.run_id, ended);
    expect(original).toMatchObject({ status: 'completed', summary: 'done (calm)' });
    const originalEvents = await allEvents(run.run_id);
    const cutoff = checkpoint.transcript_cutoff_seq;

    // The same checkpoint, untouched: the same answers after it.
    const same = await client.fork(run.run_id, { checkpoint: 1 });
    expect(same).toMatchObject({ created: true, run: { origin: { run_id: run.run_id, checkpoint_no: 1 } } });
    const sameDone = await until(same.run.run_id, ended);
    expect(sameDone).toMatchObject({ status: 'completed', summary: 'done (calm)', usage: { turns: 2 } });
    const sameEvents = await allEvents(same.run.run_id);
    expect(sameEvents[0]).toMatchObject({
      seq: 1,
      kind: 'run_started',
      data: {
        input: 'look three items up',
        origin: {
          run_id: run.run_id,
          checkpoint_no: 1,
          state_digest: state.state_digest,
          state_edited: false,
        },
      },
    });
    expect(sameEvents.slice(1, cutoff)).toEqual(originalEvents.slice(1, cutoff));
    expect(answersAfter(sameEvents, cutoff)).toEqual(answersAfter(originalEvents, cutoff));

    // An edited state, through the CLI (read the checkpoint's state, edit it, fork with it): the
    // answers after the checkpoint differ.
    const dir = await mkdtemp(join(tmpdir(), 'fork-e2e-'));
    const cli = async (...args: string[]): Promise<unknown> => {
      const out: string[] = [];
      const code = await runCli(
        ALL_HTTP_COMMANDS,
        ['--url', stack.url, '--token', stack.token, '--json', ...args],
        { out: (t) => out.push(t), err: (t) => out.push(t), cwd: dir, env: {} },
      );
      expect(code, out.join('\n')).toBe(0);
      return JSON.parse(out.join('\n'));
    };
    const read = await cli('runs', 'state', run.run_id, '--rev', String(checkpoint.state_rev));
    expect(read).toEqual(state);
    const file = join(dir, 'state.json');
    await writeFile(file, JSON.stringify({ ...(state.state as object), instructions: 'brisk' }));
    const forked = (await cli('fork', run.run_id, '--checkpoint', '1', '--state', `@${file}`)) as {
      run: RunRecord;
      created: boolean;
    };
    expect(forked.run.origin).toMatchObject({ state_edited: true, state_digest: state.state_digest });
    const edited = await until(forked.run.run_id, ended);
    expect(edited).toMatchObject({ status: 'completed', summary: 'done (brisk)' });
    const editedEvents = await allEvents(forked.run.run_id);
    expect(editedEvents.slice(1, cutoff)).toEqual(originalEvents.slice(1, cutoff));
    expect(answersAfter(editedEvents, cutoff)).not.toEqual(answersAfter(originalEvents, cutoff));

    // The original is untouched.
    expect(await client.getRun(run.run_id)).toEqual(original);
    expect(await allEvents(run.run_id)).toEqual(originalEvents);
  });

  it('answers a fork of a missing checkpoint 404 and of a live subject 409, and a bad body 400', async () => {
    const { run } = await client.createRun({
      subject: subject(),
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'go',
      context: { mode: 'task', tools: [{ name: 'lookup', mutating: false }] },
      budgets: { max_turns: 1 },
    });
    await until(run.run_id, (r) => r.status === 'paused');
    const status = async (p: Promise<unknown>) =>
      (await p.then(
        () => null,
        (e: unknown) => e,
      )) as ApiError;
    expect(await status(client.fork(run.run_id, { checkpoint: 7, subject: subject() }))).toMatchObject({
      status: 404,
      code: 'checkpoint_not_found',
    });
    expect(await status(client.fork(run.run_id, { checkpoint: 1 }))).toMatchObject({
      status: 409,
      code: 'subject_taken',
    });
    expect(
      await status(client.fork(run.run_id, { checkpoint: 1, budgets: { max_turn: 3 } } as never)),
    ).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(await status(client.state(run.run_id, { rev: 99 }))).toMatchObject({
      status: 404,
      code: 'state_not_found',
    });
  });
});
