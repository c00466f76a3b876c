/**
 * `agent-runs runs create|get|list|checkpoints|state|export|children`: create a run, read one, list
 * by status or subject, read its checkpoints, its domain state by revision, export its whole log
 * (`raisin.run-log/1`, lib/engine/upgrade/run-log.ts: the record without its capability_hash), its children.
 */
import { Command, Option } from 'commander';
import type { RunPage } from '../../lib/client/shapes.ts';
import type { WaitingReason } from '../../lib/client/waiting.ts';
import type { CreateRunInput, PublicRunRecord, RunStatus } from '../../lib/contracts/index.ts';
import { BUDGET_LIMITS, RUN_STATUSES, TERMINAL_STATUSES } from '../../lib/contracts/names.ts';
import { CliError, type CommandModule, parseIntArg, parseJsonArg } from './context.ts';

// Registration stays light (no zod, no formatting): each action imports what it uses.
const format = () => import('./format.ts');

const LIVE_STATUSES = RUN_STATUSES.filter((s) => !(TERMINAL_STATUSES as readonly string[]).includes(s));

interface CreateOptions {
  workspace?: string;
  path?: string;
  nodeId?: string;
  reducer?: string;
  handler?: string;
  input?: string;
  objective?: string;
  context?: string;
  budgets?: string;
  onExceeded?: 'pause' | 'fail';
  asAgent?: string;
  createKey?: string;
  executorConfig?: string;
  body?: string;
}

/** The create request from the options: `--body` (JSON, or @file) as the base, the other options on top. */
export function createInputOf(opts: CreateOptions): CreateRunInput {
  const base = opts.body === undefined ? {} : (parseJsonArg('--body', opts.body) as Record<string, unknown>);
  const input: Record<string, unknown> = { input: null, ...base };
  if (opts.workspace !== undefined || opts.path !== undefined) {
    if (opts.workspace === undefined || opts.path === undefined) {
      throw new CliError('invalid_argument', '--workspace and --path go together');
    }
    input.subject = {
      workspace: opts.workspace,
      path: opts.path,
      ...(opts.nodeId !== undefined ? { node_id: opts.nodeId } : {}),
    };
  }
  if (input.subject === undefined)
    throw new CliError('invalid_argument', 'give --workspace and --path (or --body)');
  if (opts.reducer !== undefined) {
    input.reducer = {
      function_path: opts.reducer,
      ...(opts.handler !== undefined ? { handler: opts.handler } : {}),
    };
  }
  if (opts.input !== undefined) input.input = parseJsonArg('--input', opts.input, true);
  if (opts.objective !== undefined) input.objective = opts.objective;
  if (opts.context !== undefined) input.context = parseJsonArg('--context', opts.context, 'unless-json-like');
  if (opts.budgets !== undefined) input.budgets = parseJsonArg('--budgets', opts.budgets);
  if (opts.onExceeded !== undefined) input.on_exceeded = opts.onExceeded;
  if (opts.asAgent !== undefined) input.as_agent = opts.asAgent;
  if (opts.createKey !== undefined) input.create_key = opts.createKey;
  if (opts.executorConfig !== undefined)
    input.executor_config = parseJsonArg('--executor-config', opts.executorConfig);
  return input as unknown as CreateRunInput;
}

export const runsCommand: CommandModule = {
  name: 'runs',
  register(program, ctx) {
    const runs = new Command('runs').description('create, read and list runs');

    runs
      .command('create')
      .description(
        'create a run on a subject (what the run works on: a workspace and a path); if the subject already has a live run (one not ended), that run is returned instead, not a new one',
      )
      .option('--workspace <workspace>', 'the workspace of the subject')
      .option('--path <path>', 'the path of the subject in its workspace')
      .option(
        '--node-id <id>',
        'one item inside the subject path (e.g. one ticket or message) when the run works on that item only',
      )
      .option('--reducer <function_path>', 'reducer function (omit for a client-driven run)')
      .option(
        '--handler <name>',
        'which exported function of the reducer module the runtime calls at each step (default: reduce)',
      )
      .option('--input <json|@file>', 'run input (JSON, @file, or a plain string)')
      .option(
        '--objective <text>',
        'what the run is for, in words (shown with the run; given to the reducer)',
      )
      .option(
        '--context <json|@file>',
        'what the reducer reads besides the input, e.g. the tools offered (JSON, @file, or a plain string)',
      )
      .option(
        '--budgets <json|@file>',
        `limits, e.g. {"max_turns":10}; keys: ${BUDGET_LIMITS.join(', ')} (max_wall_ms in milliseconds, the rest counts; absent: unlimited)`,
      )
      .addOption(
        new Option('--on-exceeded <action>', 'what a budget overrun does (default: pause)').choices([
          'pause',
          'fail',
        ]),
      )
      .option(
        '--as-agent <path>',
        "run as this registered agent (e.g. functions:/agents/x), on behalf of you: its tool calls get the agent's rights, narrowed to yours",
      )
      .option(
        '--create-key <key>',
        'any string you choose: sending the same create again with it (e.g. after a timeout) returns the run the first one made, not a second',
      )
      .option(
        '--executor-config <json|@file>',
        'settings for the runtime that carries out what the reducer asks for, such as which model answers its model turns (JSON object), e.g. {"model_turn_function":"/lib/models/openai"}',
      )
      .option('--body <json|@file>', 'the whole create request as JSON (options override its fields)')
      .action(async (opts: CreateOptions, cmd: Command) => {
        const out = await ctx.client(cmd).createRun(createInputOf(opts));
        ctx.print(
          cmd,
          () => {
            const head = out.created
              ? `created ${out.run.run_id} (${out.run.status})`
              : `existing run ${out.run.run_id} (${out.run.status}): the subject already has a live run, or the create key was used`;
            return out.control_capability === undefined
              ? head
              : `${head}\ncontrol capability (shown once): ${out.control_capability}`;
          },
          out,
        );
      });

    runs
      .command('get <run>')
      .description(
        'show a run with its plan (what its reducer shows of its progress), and why it is not moving (with the command that moves it on)',
      )
      .option(
        '--at <seq>',
        'the run as it stood at this event number (seq): status, state, plan, open requests',
      )
      .action(async (runId: string, opts: { at?: string }, cmd: Command) => {
        const client = ctx.client(cmd);
        if (opts.at !== undefined) {
          const at = await client.getRunAtSeq(runId, parseIntArg('--at', opts.at));
          const { formatRunAt } = await format();
          ctx.print(cmd, () => formatRunAt(at), at);
          return;
        }
        const [{ formatRun }, { timingFor, waitingReasons }] = await Promise.all([
          format(),
          import('../../lib/client/waiting.ts'),
        ]);
        const run = await client.getRun(runId);
        const timing = ctx.json(cmd) ? undefined : await timingFor(run, client);
        const now = Date.now();
        // A child the run waits for explains itself too (one read per child waited for).
        const children = new Map<string, WaitingReason[]>();
        for (const reason of ctx.json(cmd) ? [] : waitingReasons(run, now, timing, ctx.cli)) {
          if (reason.child_run_id === undefined || children.has(reason.child_run_id)) continue;
          // The child's view is extra: if it cannot be read, the parent's reason still stands.
          const child = await client.getRun(reason.child_run_id).catch(() => null);
          if (child !== null) children.set(reason.child_run_id, waitingReasons(child, now, timing, ctx.cli));
        }
        ctx.print(cmd, () => formatRun(run, now, children, ctx.cli, timing), run);
      });

    runs
      .command('list')
      .description(
        'list runs by status or by subject; default: the live ones (queued, running, waiting, paused, cancelling), not the ended ones (completed, failed, stopped)',
      )
      .addOption(new Option('--status <status>', 'only this status').choices([...RUN_STATUSES]))
      .option(
        '--workspace <workspace>',
        "the subject's workspace (with --path: that subject's live run, if any)",
      )
      .option('--path <path>', "the subject's path")
      .option('--limit <n>', 'page size (1..100)', '20')
      .option('--cursor <cursor>', 'next page, as printed by the previous one (with its --status)')
      .action(
        async (
          opts: { status?: RunStatus; workspace?: string; path?: string; limit: string; cursor?: string },
          cmd: Command,
        ) => {
          const client = ctx.client(cmd);
          const limit = parseIntArg('--limit', opts.limit);
          if ((opts.workspace === undefined) !== (opts.path === undefined)) {
            throw new CliError('invalid_argument', '--workspace and --path go together');
          }
          let page: RunPage;
          let listed: RunStatus | undefined;
          if (opts.workspace !== undefined && opts.path !== undefined) {
            page = await client.listRuns({
              subject: { workspace: opts.workspace, path: opts.path },
              ...(opts.status !== undefined ? { status: opts.status } : {}),
            });
          } else if (opts.status !== undefined || opts.cursor !== undefined) {
            listed = opts.status ?? 'running';
            page = await client.listRuns({
              status: listed,
              limit,
              ...(opts.cursor !== undefined ? { cursor: opts.cursor } : {}),
            });
          } else {
            // No filter: the first page of every live status, newest first.
            const pages = await Promise.all(
              LIVE_STATUSES.map((status) => client.listRuns({ status, limit })),
            );
            const all: PublicRunRecord[] = pages.flatMap((p) => p.runs);
            page = { runs: all.sort((a, b) => b.created_at - a.created_at).slice(0, limit) };
          }
          const { formatRunList } = await format();
          const ended =
            opts.status === undefined && opts.workspace === undefined
              ? `\nended runs (${TERMINAL_STATUSES.join(', ')}) are not listed: add --status completed (or failed, stopped)`
              : '';
          ctx.print(cmd, () => `${formatRunList(page.runs, page.cursor, listed)}${ended}`, page);
        },
      );

    runs
      .command('checkpoints <run> [n]')
      .description("list a run's checkpoints, or show checkpoint n")
      .action(async (runId: string, n: string | undefined, _opts: unknown, cmd: Command) => {
        const client = ctx.client(cmd);
        if (n === undefined) {
          const checkpoints = await client.listRunCheckpoints(runId);
          const { formatCheckpoints } = await format();
          ctx.print(cmd, () => formatCheckpoints(checkpoints), checkpoints);
        } else {
          const checkpoint = await client.getRunCheckpoint(runId, parseIntArg('n', n));
          ctx.print(cmd, () => JSON.stringify(checkpoint, null, 2), checkpoint);
        }
      });

    runs
      .command('state <run>')
      .description("show a run's domain state (the current revision, or --rev N)")
      .option('--rev <n>', 'the state revision (e.g. a checkpoint state_rev)')
      .action(async (runId: string, opts: { rev?: string }, cmd: Command) => {
        const state = await ctx
          .client(cmd)
          .state(runId, opts.rev === undefined ? {} : { rev: parseIntArg('--rev', opts.rev) });
        ctx.print(
          cmd,
          () => `revision ${state.state_rev} (sha256 ${state.state_digest})
${JSON.stringify(state.state, null, 2)}`,
          state,
        );
      });

    runs
      .command('export <run>')
      .description(
        "write a run's whole log (record, events, checkpoints, stored states) as one JSON file that `reducers check --from` reads",
      )
      .option('-o, --output <file>', 'where to write it (default: stdout)')
      .action(async (runId: string, opts: { output?: string }, cmd: Command) => {
        const { exportRunLog } = await import('../../lib/engine/upgrade/run-log.ts');
        const log = await exportRunLog(ctx.client(cmd), runId, Date.now());
        const text = JSON.stringify(log, null, 2);
        if (opts.output === undefined) {
          ctx.io.out(text);
          return;
        }
        const { writeFileSync } = await import('node:fs');
        const { resolve } = await import('node:path');
        writeFileSync(resolve(ctx.io.cwd, opts.output), `${text}\n`);
        const events = (log.events as unknown[]).length;
        ctx.print(cmd, () => `wrote ${opts.output}: run ${runId}, ${events} events`, {
          file: opts.output,
          run_id: runId,
          events,
        });
      });

    runs
      .command('children <run>')
      .description('list the child runs a run delegated to')
      .action(async (runId: string, _opts: unknown, cmd: Command) => {
        const children = await ctx.client(cmd).listRunChildren(runId);
        ctx.print(
          cmd,
          () =>
            children.length === 0
              ? 'no child runs'
              : children.map((c) => `${c.run_id}  ${c.status}  depth ${c.depth}`).join('\n'),
          children,
        );
      });

    program.addCommand(runs);
  },
};
