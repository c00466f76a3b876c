/**
 * The action of `agent-runs reducers check` (loaded only when it runs): reads the artifact and
 * the run logs, checks each run, prints one line per run (plus the diff of a divergent one) and
 * the totals, or one JSON object with --json: `{artifact: {kind, hash}, runs: RunCheck[], totals}`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { checkRunLog, checkTotals, type RunCheck } from '../../lib/engine/upgrade/reducer-check.ts';
import { exportRunLog, parseRunLog, type RunLog } from '../../lib/engine/upgrade/run-log.ts';
import { createCheckHost } from '../../lib/sandbox/check-host.ts';
import { hashArtifactBytes } from '../../lib/sandbox/function-registry.ts';
import { type CliContext, CliError } from './context.ts';
import { artifactKindOf, type CheckOptions, checkSelection } from './reducers.ts';

/** The artifact to check: a file, or the one published at `--path` (its hash must be `--hash` when given). */
async function artifactOf(ctx: CliContext, cmd: Command, opts: CheckOptions) {
  if (opts.artifact !== undefined) {
    const file = resolve(ctx.io.cwd, opts.artifact);
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(readFileSync(file));
    } catch (err) {
      throw new CliError('artifact_unreadable', `cannot read ${file}: ${(err as Error).message}`);
    }
    return { kind: artifactKindOf(file, opts.kind), bytes };
  }
  const published = await ctx.client(cmd).getFunction(opts.path as string);
  if (opts.hash !== undefined && published.hash !== opts.hash) {
    throw new CliError(
      'artifact_hash_mismatch',
      `the artifact at ${opts.path} has hash ${published.hash}, not ${opts.hash}`,
    );
  }
  return { kind: published.kind, bytes: published.bytes };
}

/** The logs of `--from`: one file, or every `*.json` file of a directory (sorted by name). */
function logsFrom(ctx: CliContext, from: string): RunLog[] {
  const path = resolve(ctx.io.cwd, from);
  let files: string[];
  try {
    files = statSync(path).isDirectory()
      ? readdirSync(path)
          .filter((f) => f.endsWith('.json'))
          .sort()
          .map((f) => join(path, f))
      : [path];
  } catch (err) {
    throw new CliError('run_log_unreadable', `cannot read ${path}: ${(err as Error).message}`);
  }
  if (files.length === 0) throw new CliError('run_log_unreadable', `no *.json run logs in ${path}`);
  return files.map((file) => {
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new CliError('invalid_run_log', `${file}: ${(err as Error).message}`);
    }
    try {
      return parseRunLog(value, file);
    } catch (err) {
      throw new CliError('invalid_run_log', (err as Error).message);
    }
  });
}

/** One run's result as a line (and its diff, indented). */
export function formatRunCheck(c: RunCheck): string {
  switch (c.result) {
    case 'identical':
      return `${c.run_id}  identical  (${c.deliveries} deliveries)`;
    case 'skipped':
      return `${c.run_id}  skipped  (${c.reason})`;
    case 'diverged':
      return [
        `${c.run_id}  diverged at seq ${c.event_seq} (answer seq ${c.answer_seq}, delivery ${c.deliveries})`,
        ...c.diff.map((d) => `    ${d}`),
        ...(c.reason !== undefined ? [`    (the new artifact: ${c.reason})`] : []),
      ].join('\n');
  }
}

/** Runs the check; returns the totals (the caller sets the exit code). */
export async function runCheck(ctx: CliContext, cmd: Command, opts: CheckOptions) {
  checkSelection(opts);
  const artifact = await artifactOf(ctx, cmd, opts);
  const logs: RunLog[] = opts.from !== undefined ? logsFrom(ctx, opts.from) : [];
  for (const id of opts.run ?? []) {
    logs.push(parseRunLog(await exportRunLog(ctx.client(cmd), id, Date.now()), `run ${id}`));
  }
  const host = createCheckHost(artifact);
  const checks: RunCheck[] = [];
  try {
    for (const log of logs) checks.push(await checkRunLog(host, log));
  } finally {
    await host.close();
  }
  const totals = checkTotals(checks);
  const hash = hashArtifactBytes(artifact.bytes);
  ctx.print(
    cmd,
    () =>
      [
        ...checks.map(formatRunCheck),
        `${totals.runs} runs: ${totals.identical} identical, ${totals.diverged} diverged, ${totals.skipped} skipped (${totals.deliveries} deliveries checked against ${artifact.kind} ${hash.slice(0, 12)})`,
      ].join('\n'),
    { artifact: { kind: artifact.kind, hash }, runs: checks, totals },
  );
  return totals;
}
