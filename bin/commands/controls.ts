/**
 * The controls: `stop`, `pause`, `resume`, `steer`, `approve`, `answer`, and `deliver` (an
 * external result by resume key). Each prints the ack; a rejected control (an ack, not an
 * error) sets exit code 2. `--control-id` reuses an id to retry safely; `--capability` presents
 * the run's control capability. docs/contracts/run-lifecycle.md, "Controls".
 */
import type { Command } from 'commander';
import type { ControlOptions, Delivery } from '../../lib/client/shapes.ts';
import type { ControlAck, SteerWhenBusy } from '../../lib/contracts/index.ts';
import { STEER_WHEN_BUSY } from '../../lib/contracts/names.ts';
import { type CliContext, CliError, type CommandModule, parseJsonArg } from './context.ts';
import { bareDigest, digestToQuote, isFullDigest, requestIdOf } from './request-ref.ts';

const isWhenBusy = (v: string): v is SteerWhenBusy => (STEER_WHEN_BUSY as readonly string[]).includes(v);

/** Exit code of a command whose control was rejected. */
export const REJECTED_EXIT_CODE = 2;

interface CommonOptions {
  controlId?: string;
  capability?: string;
}

function common(opts: CommonOptions): ControlOptions {
  return {
    ...(opts.controlId !== undefined ? { control_id: opts.controlId } : {}),
    ...(opts.capability !== undefined ? { capability: opts.capability } : {}),
  };
}

function capabilityOf(opts: CommonOptions): { capability?: string } {
  return opts.capability !== undefined ? { capability: opts.capability } : {};
}

function withCommon(cmd: Command): Command {
  return cmd
    .option('--control-id <id>', 'control id (default: a new UUID); resend the same id to retry safely')
    .option('--capability <secret>', "the run's control capability (from runs create)");
}

async function report(ctx: CliContext, cmd: Command, ack: ControlAck): Promise<void> {
  const { formatAck } = await import('./format.ts');
  ctx.print(cmd, () => formatAck(ack), ack);
  if (ack.ack === 'rejected') ctx.exitCode = REJECTED_EXIT_CODE;
}

export const controlsCommand: CommandModule = {
  name: 'controls',
  register(program, ctx) {
    withCommon(program.command('stop <run>'))
      .description('stop a run (during an operation: cancelling, then stopped)')
      .option('--reason <text>', 'why')
      .action(async (runId: string, opts: CommonOptions & { reason?: string }, cmd: Command) => {
        const ack = await ctx.client(cmd).stop(runId, {
          ...common(opts),
          ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
        });
        await report(ctx, cmd, ack);
      });

    withCommon(program.command('pause <run>'))
      .description('pause a run at the next boundary (writes a checkpoint)')
      .option('--reason <text>', 'why')
      .action(async (runId: string, opts: CommonOptions & { reason?: string }, cmd: Command) => {
        const ack = await ctx.client(cmd).pause(runId, {
          ...common(opts),
          ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
        });
        await report(ctx, cmd, ack);
      });

    withCommon(program.command('resume <run>'))
      .description('resume a paused run')
      .option('--budget-increase <json|@file>', 'more budget, e.g. {"max_operations":10}')
      .option('--accept-reducer-change', 'accept a changed reducer artifact (after reducer_changed)')
      .action(
        async (
          runId: string,
          opts: CommonOptions & { budgetIncrease?: string; acceptReducerChange?: boolean },
          cmd: Command,
        ) => {
          const increase =
            opts.budgetIncrease === undefined
              ? undefined
              : parseJsonArg('--budget-increase', opts.budgetIncrease);
          if (
            increase !== undefined &&
            (typeof increase !== 'object' || increase === null || Array.isArray(increase))
          ) {
            throw new CliError('invalid_argument', '--budget-increase must be a JSON object');
          }
          const ack = await ctx.client(cmd).resume(runId, {
            ...common(opts),
            ...(increase !== undefined ? { budget_increase: increase as Record<string, number> } : {}),
            ...(opts.acceptReducerChange === true ? { accept_reducer_change: true } : {}),
          });
          await report(ctx, cmd, ack);
        },
      );

    withCommon(program.command('steer <run> <input>'))
      .description('queue new input (JSON, @file, or a plain string), consumed between operations')
      .option(
        '--when-busy <enqueue|reject|interrupt>',
        'while an operation is in flight: queue (default), refuse (run_busy), or cancel it first',
      )
      .action(
        async (runId: string, input: string, opts: CommonOptions & { whenBusy?: string }, cmd: Command) => {
          const whenBusy = opts.whenBusy;
          if (whenBusy !== undefined && !isWhenBusy(whenBusy))
            throw new CliError('invalid_argument', '--when-busy must be enqueue, reject or interrupt');
          const ack = await ctx.client(cmd).steer(runId, parseJsonArg('input', input, true), {
            ...common(opts),
            ...(whenBusy !== undefined ? { when_busy: whenBusy } : {}),
          });
          await report(ctx, cmd, ack);
        },
      );

    withCommon(program.command('approve <run> <request_id>'))
      .description(
        "decide an open approval (request_id RUN/req/N, or req/N); --digest quotes the request's subject.digest, whole or its first 12+ hex characters as `events` shows them (read from the run and sent whole; one that does not match sends nothing); `runs get` prints the whole line to paste",
      )
      .requiredOption(
        '--digest <digest>',
        "the request's subject.digest, or its first 12+ hex characters (`runs get` shows it as `digest ...`)",
      )
      .option('--reject', 'reject instead of approve')
      .option('--reason <text>', 'why')
      .action(
        async (
          runId: string,
          requestId: string,
          opts: CommonOptions & { digest: string; reject?: boolean; reason?: string },
          cmd: Command,
        ) => {
          const id = requestIdOf(runId, requestId, ctx.cli);
          const client = ctx.client(cmd);
          const digest = isFullDigest(opts.digest)
            ? bareDigest(opts.digest)
            : digestToQuote(
                runId,
                id,
                opts.digest,
                (await client.getRun(runId, capabilityOf(opts))).open_requests,
                ctx.cli,
              );
          const ack = await client.approve(runId, id, digest, {
            ...common(opts),
            decision: opts.reject === true ? 'rejected' : 'approved',
            ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
          });
          await report(ctx, cmd, ack);
        },
      );

    withCommon(program.command('answer <run> <request_id> <value>'))
      .description(
        'answer a question the run asked (an open input request, RUN/req/N or req/N); value is JSON, @file, or a plain string',
      )
      .action(async (runId: string, requestId: string, value: string, opts: CommonOptions, cmd: Command) => {
        const id = requestIdOf(runId, requestId, ctx.cli);
        const ack = await ctx.client(cmd).answer(runId, id, parseJsonArg('value', value, true), common(opts));
        await report(ctx, cmd, ack);
      });

    program
      .command('deliver <resume_key> <json>')
      .description(
        'deliver an external result (a raisin.tool-result/1 envelope or any JSON; @file reads a file)',
      )
      .option('--capability <secret>', "the run's control capability")
      .option('--delivery-id <id>', 'your id of this delivery: a repeat is answered as a duplicate')
      .action(
        async (
          resumeKey: string,
          json: string,
          opts: { capability?: string; deliveryId?: string },
          cmd: Command,
        ) => {
          const out = await ctx.client(cmd).deliverResult(resumeKey, parseJsonArg('json', json), {
            ...(opts.capability !== undefined ? { capability: opts.capability } : {}),
            ...(opts.deliveryId !== undefined ? { delivery_id: opts.deliveryId } : {}),
          });
          ctx.print(cmd, () => deliveryLine(out), out);
        },
      );
  },
};

/** One line for a delivery's answer. */
function deliveryLine(out: Delivery): string {
  if (out.ack === 'applied') return `delivered to ${out.run_id} (seq ${out.seq})`;
  if (out.ack === 'held') return `held until ${new Date(out.expires_at).toISOString()}: no wait recorded yet`;
  return 'original_seq' in out ? `duplicate of seq ${out.original_seq}` : 'duplicate (still held)';
}
