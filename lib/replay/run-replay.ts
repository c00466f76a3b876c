/**
 * `agent-runs replay FILE`: replays recorded conversations as durable runs on a stack and
 * reports, per conversation, whether the runtime reproduced it exactly. Output: progress (a bar
 * on a terminal, else plain lines: lib/progress.ts), one line per diverged conversation with its first difference, a summary table, a JSON report.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { UsageCost } from '../contracts/index.ts';
import { perMillionOperations } from '../core/prices.ts';
import { createRecordedModel } from '../models/recorded.ts';
import { loadToolsOffered, loadTrajectories, readDataFile, type TauTrajectory } from '../models/tau-bench.ts';
import type { ModelTurnFunction } from '../models/types.ts';
import { startProgress } from '../progress.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import { loadAirlineBase } from './airline/database.ts';
import {
  createLiveWorld,
  type LiveAssessment,
  type LiveWorld,
  withTodaysAddressKey,
} from './airline/live-world.ts';
import { type Chaos, type ChaosStats, createChaos } from './chaos.ts';
import { MUTATING_TOOLS, prepareConversation, type ReplayConversation } from './conversations.ts';
import {
  type ConversationResult,
  RECORDED_MODEL_PATH,
  type ReplayApi,
  replayConversation,
} from './driver.ts';
import { createReplayWorld, type ReplayWorld } from './world.ts';

/** What the replay needs from a stack it starts: the API, and a way to stop it. */
export interface ReplayStack {
  api: ReplayApi;
  stop(): Promise<void>;
}

/** Starts a stack wired for replay (tools, recorded model, chaos hooks). */
export type StartReplayStack = (wiring: {
  registerTools: (registry: ToolRegistry) => void;
  modelFunctions: Record<string, ModelTurnFunction>;
  chaos: Chaos | null;
  leaseTtlMs: number;
}) => Promise<ReplayStack>;

export interface ReplayOptions {
  file: string;
  toolsFile: string;
  /**
   * `recorded` (default): tools answer with the recorded outputs. `live`: the 14 airline tools
   * run for real over a private copy of the database per conversation, and the benchmark's
   * verdict is recomputed.
   */
  world?: 'recorded' | 'live';
  /** The airline database directory of the live world (default: `db` beside `file`). */
  databaseDir?: string;
  /** Live world: write each conversation's final database to `DIR/{task_id}-{trial}.json`. */
  finalDbDir?: string;
  /** Replays the model from this file instead (tests: an altered recording against the real world). */
  modelFile?: string;
  chaos?: boolean;
  /**
   * Tools each run declares non-replay-safe: a call of one abandoned by a crash reaches the
   * reducer as outcome_unknown (a read is then issued again; a mutating call is answered
   * "outcome unknown", which the recording cannot match).
   */
  notReplaySafe?: readonly string[];
  seed?: number;
  concurrency?: number;
  limit?: number;
  reportPath?: string;
  /**
   * Progress while it runs: how many conversations up front, the expected duration after the
   * first few, then a line per 5 % (or 15 s) with count, rate and time left (lib/progress.ts);
   * a bar instead on `progressTty`. Default false: only the results.
   */
  progress?: boolean;
  /** The terminal to draw the progress bar on (with `progress`); undefined: plain lines. */
  progressTty?: NodeJS.WritableStream;
  startStack: StartReplayStack;
  out?: (line: string) => void;
}

export interface ReplaySummary {
  conversations: number;
  identical: number;
  diverged: number;
  model_turns: number;
  tool_calls: number;
  approvals: number;
  answers: number;
  faults_injected: number;
  recoveries: number;
  outcome_unknown: number;
  wall_ms: number;
  operations_per_second: number;
  chaos: ChaosStats | null;
  /** Live world only (null with the recorded world). */
  live: LiveSummary | null;
  /** Peak resident set size of this process during the replay (MB). */
  peak_rss_mb: number;
  /** What the runs cost (their views' usage.cost), null when no run reported one. */
  cost: CostSummary | null;
}

/** The runs' costs summed, per run and per 1M operations (README "Cost per run"). */
export interface CostSummary {
  runs: number;
  operations: number;
  total_usd: number;
  model_usd: number;
  aws_usd: number;
  per_run_usd: number;
  aws_per_run_usd: number;
  per_million_operations_usd: number;
  aws_per_million_operations_usd: number;
  /** The AWS dollars by service, summed over the runs. */
  aws_lines: { dynamodb_usd: number; lambda_usd: number; sqs_usd: number; s3_usd: number };
  model: string | null;
  region: string;
  prices_as_of: string;
}

/** Sums the costs of the runs that reported one. */
export function costSummary(results: readonly ConversationResult[]): CostSummary | null {
  const priced = results.flatMap((r) =>
    r.cost !== undefined ? [{ cost: r.cost, ops: r.operations ?? 0 }] : [],
  );
  const first = priced[0];
  if (first === undefined) return null;
  const sum = (f: (c: UsageCost) => number) => round(priced.reduce((n, p) => n + f(p.cost), 0));
  const operations = priced.reduce((n, p) => n + p.ops, 0);
  const total = sum((c) => c.total_usd);
  const aws = sum((c) => c.aws_usd);
  return {
    runs: priced.length,
    operations,
    total_usd: total,
    model_usd: sum((c) => c.model_usd),
    aws_usd: aws,
    per_run_usd: round(total / priced.length),
    aws_per_run_usd: round(aws / priced.length),
    per_million_operations_usd: perMillionOperations(total, operations),
    aws_per_million_operations_usd: perMillionOperations(aws, operations),
    aws_lines: {
      dynamodb_usd: sum((c) => c.lines.dynamodb_write_usd + c.lines.dynamodb_read_usd),
      lambda_usd: sum((c) => c.lines.lambda_requests_usd + c.lines.lambda_duration_usd),
      sqs_usd: sum((c) => c.lines.sqs_usd),
      s3_usd: sum((c) => c.lines.s3_usd),
    },
    model: first.cost.model,
    region: first.cost.region,
    prices_as_of: first.cost.prices_as_of,
  };
}

const round = (usd: number) => Math.round(usd * 1e10) / 1e10;

function costRows(c: CostSummary | null): [string, string][] {
  if (c === null) return [['cost', 'not reported']];
  const usd = (x: number) => `$${x.toFixed(6)}`;
  return [
    [
      `cost per run (${c.region} prices of ${c.prices_as_of})`,
      `${usd(c.per_run_usd)} (AWS ${usd(c.aws_per_run_usd)}, model ${c.model ?? 'unpriced'})`,
    ],
    [
      'cost per 1M operations',
      `$${c.per_million_operations_usd.toFixed(2)} (AWS $${c.aws_per_million_operations_usd.toFixed(2)})`,
    ],
    [
      'AWS cost of all runs',
      `${usd(c.aws_usd)}: DynamoDB ${usd(c.aws_lines.dynamodb_usd)}, Lambda ${usd(c.aws_lines.lambda_usd)}, SQS ${usd(c.aws_lines.sqs_usd)}, S3 ${usd(c.aws_lines.s3_usd)}`,
    ],
    ['cost of all runs', `${usd(c.total_usd)} over ${c.runs} runs, ${c.operations} operations`],
  ];
}

/** What the live world adds to the summary. */
export interface LiveSummary {
  outputs_compared: number;
  outputs_identical: number;
  outputs_key_mapped: number;
  /** Mutating calls in the recordings, and mutating operations the world executed. */
  mutating_recorded: number;
  mutating_executed: number;
  receipts_replayed: number;
  reads_repeated: number;
  /** Conversations with a verdict; recomputed rewards summed, recorded rewards summed, agreements. */
  judged_conversations: number;
  reward_recomputed: number;
  reward_recorded: number;
  verdicts_agree: number;
  /** Conversations the benchmark never judged (the recording stopped at its step limit). */
  not_judged: number;
  /** Agreement once the benchmark's own rule for those is applied (reward 0, not judged). */
  benchmark_rewards_agree: number;
  /** Bytes of records and receipts held per conversation over the shared base (largest). */
  private_bytes_max: number;
}

export interface ReplayReport {
  summary: ReplaySummary;
  conversations: ConversationResult[];
}

/** Stable code of {@link ReplayOptionError}. */
export const REPLAY_OPTION_INVALID = 'replay_option_invalid';

/** A replay option names something the recording does not have (e.g. an unknown tool). Nothing was started. */
export class ReplayOptionError extends Error {
  override readonly name = 'ReplayOptionError';
  readonly code = REPLAY_OPTION_INVALID;
}

/** Lease TTL of the replay stack: short under chaos so that takeovers happen within seconds. */
export const CHAOS_LEASE_TTL_MS = 3_000;

export async function runReplay(options: ReplayOptions): Promise<ReplayReport> {
  const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const started = Date.now();
  const peak = trackPeakRss();
  const live = options.world === 'live';
  // The live world compares with today's address key (`state`, recorded as `province`).
  const prepare = (t: TauTrajectory) => (live ? withTodaysAddressKey(t) : { trajectory: t, mapped: 0 });
  const trajectories = await loadTrajectories(options.file);
  const selected = (options.limit !== undefined ? trajectories.slice(0, options.limit) : trajectories).map(
    prepare,
  );
  const conversations: ReplayConversation[] = selected.map((p) => prepareConversation(p.trajectory));
  const modelConversations = options.modelFile
    ? (await loadTrajectories(options.modelFile)).map((t) => prepareConversation(prepare(t).trajectory))
    : conversations;
  const toolsJson: unknown = JSON.parse(await readDataFile(options.toolsFile));
  const tools = await loadToolsOffered(options.toolsFile);
  const liveWorld = live
    ? createLiveWorld(
        await loadAirlineBase(options.databaseDir ?? resolve(options.file, '..', 'db')),
        conversations,
        new Map(conversations.map((c, i) => [c.key, selected[i]?.mapped ?? 0])),
      )
    : null;
  const world: ReplayWorld = liveWorld ?? createReplayWorld(conversations);
  const notReplaySafe: ReadonlySet<string> = new Set(options.notReplaySafe ?? []);
  const unknownTools = [...notReplaySafe].filter((name) => !tools.some((t) => t.name === name));
  if (unknownTools.length > 0) {
    throw new ReplayOptionError(
      `notReplaySafe names tools that ${options.toolsFile} lacks: ${unknownTools.join(', ')}`,
    );
  }
  const leaseTtlMs = options.chaos ? CHAOS_LEASE_TTL_MS : 30_000;
  const chaos = options.chaos ? createChaos({ seed: options.seed ?? 1, leaseTtlMs }) : null;
  const stack = await options.startStack({
    registerTools: (registry) => world.registerTools(registry, toolsJson),
    modelFunctions: {
      [RECORDED_MODEL_PATH]: createRecordedModel(
        new Map(modelConversations.map((c) => [c.key, c.recording])),
      ),
    },
    chaos,
    leaseTtlMs,
  });
  const concurrency = Math.max(1, options.concurrency ?? 4);
  if (options.progress) {
    out(
      `replaying ${conversations.length} conversations (world ${live ? 'live' : 'recorded'}` +
        `${chaos ? ', chaos on' : ''}, ${concurrency} at a time); report: ${options.reportPath ?? 'none (no reportPath)'}`,
    );
  }
  const bar = options.progress
    ? startProgress({
        label: 'replay',
        total: conversations.length,
        unit: 'conversations',
        out,
        tty: options.progressTty,
        estimateAfter: Math.min(conversations.length, Math.max(3, concurrency)),
      })
    : null;
  const results: ConversationResult[] = [];
  let diverged = 0;
  try {
    const queue = [...conversations];
    const workers = Array.from({ length: concurrency }, async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        const result = await replayConversation(stack.api, world, next, { tools, notReplaySafe });
        results.push(result);
        if (!result.identical) diverged += 1;
        bar?.tick(1, `${diverged} diverged`);
      }
    });
    await Promise.all(workers);
  } finally {
    bar?.stop();
    await stack.stop();
    peak.stop();
  }
  results.sort(
    (a, b) =>
      conversations.findIndex((c) => c.key === a.key) - conversations.findIndex((c) => c.key === b.key),
  );
  for (const r of results) if (!r.identical) out(divergenceLine(r));
  for (const r of results) if (r.live !== undefined && !r.live.verdict.agrees) out(verdictLine(r));
  if (liveWorld !== null && options.finalDbDir !== undefined) {
    await writeFinalDatabases(liveWorld, conversations, options.finalDbDir);
    out(`final databases: ${options.finalDbDir}/{task_id}-{trial}.json (${conversations.length} files)`);
  }
  const wall = Date.now() - started;
  const operations = results.reduce((n, r) => n + r.model_turns + r.tool_calls, 0);
  const summary: ReplaySummary = {
    conversations: results.length,
    identical: results.filter((r) => r.identical).length,
    diverged: results.filter((r) => !r.identical).length,
    model_turns: results.reduce((n, r) => n + r.model_turns, 0),
    tool_calls: results.reduce((n, r) => n + r.tool_calls, 0),
    approvals: results.reduce((n, r) => n + r.approvals, 0),
    answers: results.reduce((n, r) => n + r.answers, 0),
    faults_injected: chaos
      ? chaos.stats.kills + chaos.stats.duplicated + chaos.stats.delayed + chaos.stats.expired
      : 0,
    recoveries: results.reduce((n, r) => n + r.recoveries, 0),
    outcome_unknown: results.reduce((n, r) => n + r.outcome_unknown, 0),
    wall_ms: wall,
    operations_per_second: Math.round((operations / (wall / 1000)) * 10) / 10,
    chaos: chaos ? chaos.stats : null,
    live: live ? liveSummary(results, conversations) : null,
    peak_rss_mb: Math.round(peak.mb()),
    cost: costSummary(results),
  };
  for (const line of summaryTable(summary)) out(line);
  const report: ReplayReport = { summary, conversations: results };
  if (options.reportPath !== undefined) {
    await mkdir(dirname(options.reportPath), { recursive: true });
    await writeFile(options.reportPath, `${JSON.stringify(report, null, 2)}\n`);
    out(`report: ${options.reportPath}`);
  }
  return report;
}

function liveSummary(results: ConversationResult[], conversations: ReplayConversation[]): LiveSummary {
  const lives = results.flatMap((r) => (r.live !== undefined ? [r.live] : []));
  const sum = (f: (l: LiveAssessment) => number) => lives.reduce((n, l) => n + f(l), 0);
  return {
    outputs_compared: sum((l) => l.outputs_compared),
    outputs_identical: sum((l) => l.outputs_identical),
    outputs_key_mapped: sum((l) => l.outputs_key_mapped),
    mutating_recorded: conversations.reduce(
      (n, c) => n + c.toolCalls.filter((call) => MUTATING_TOOLS.has(call.name)).length,
      0,
    ),
    mutating_executed: sum((l) => l.mutating_executed),
    receipts_replayed: sum((l) => l.receipts_replayed),
    reads_repeated: sum((l) => l.reads_repeated),
    judged_conversations: lives.length,
    reward_recomputed: sum((l) => l.verdict.reward),
    reward_recorded: sum((l) => l.verdict.recorded_reward),
    verdicts_agree: lives.filter((l) => l.verdict.agrees).length,
    not_judged: lives.filter((l) => !l.verdict.episode_done).length,
    benchmark_rewards_agree: lives.filter((l) => l.verdict.benchmark_reward === l.verdict.recorded_reward)
      .length,
    private_bytes_max: Math.max(0, ...lives.map((l) => l.private_bytes)),
  };
}

async function writeFinalDatabases(
  world: LiveWorld,
  conversations: readonly ReplayConversation[],
  dir: string,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const c of conversations) {
    const db = world.finalDatabase(c.key);
    if (db !== null) await writeFile(join(dir, `${c.task_id}-${c.trial}.json`), JSON.stringify(db));
  }
}

/** Samples this process's resident set size every 250 ms; `mb()` is the peak so far. */
function trackPeakRss(): { mb(): number; stop(): void } {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 250);
  timer.unref();
  return {
    mb: () => Math.max(peak, process.memoryUsage.rss()) / 2 ** 20,
    stop: () => clearInterval(timer),
  };
}

export function verdictLine(r: ConversationResult): string {
  const v = r.live?.verdict;
  if (v === undefined) return `VERDICT ${r.key}: none`;
  const why = !v.episode_done
    ? ' (the benchmark never judged it: the recording stopped at its step limit, reward 0 by rule)'
    : v.database_matches
      ? ` (outputs said: ${JSON.stringify(v.outputs)})`
      : ` (database differs at ${v.differences.map((d) => d.path).join(', ')})`;
  return `VERDICT ${r.key}: recomputed ${v.reward}, recorded ${v.recorded_reward}${why}`;
}

function short(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

export function divergenceLine(r: ConversationResult): string {
  const d = r.first_difference;
  if (r.error !== undefined) return `DIVERGED ${r.key} run=${r.run_id ?? '-'}: ${r.error}`;
  if (d === null) return `DIVERGED ${r.key}`;
  return `DIVERGED ${r.key} run=${r.run_id} at message ${d.position} (${d.source}): ${d.detail}; expected ${short(d.expected)}; got ${short(d.got)}`;
}

function liveRows(l: LiveSummary | null): [string, string][] {
  if (l === null) return [['world', 'recorded outputs']];
  return [
    ['world', 'live airline tools, private database each'],
    [
      'live tool outputs identical to the recording',
      `${l.outputs_identical} of ${l.outputs_compared} (${l.outputs_key_mapped} read province as state)`,
    ],
    ['mutating calls executed', `${l.mutating_executed} (recorded ${l.mutating_recorded})`],
    ['receipts replayed (re-dispatches)', String(l.receipts_replayed)],
    ['reads executed again (re-dispatches)', String(l.reads_repeated)],
    [
      'verdicts agreeing with the recording',
      `${l.verdicts_agree} of ${l.judged_conversations} (recomputed reward ${l.reward_recomputed}, recorded ${l.reward_recorded})`,
    ],
    [
      'benchmark rewards agreeing',
      `${l.benchmark_rewards_agree} of ${l.judged_conversations} (${l.not_judged} never judged: step limit)`,
    ],
    ['private data per conversation (max)', `${(l.private_bytes_max / 1024).toFixed(1)} KB`],
  ];
}

export function summaryTable(s: ReplaySummary): string[] {
  const rows: [string, string][] = [
    ['conversations', String(s.conversations)],
    ['identical', String(s.identical)],
    ['diverged', String(s.diverged)],
    ['model turns', String(s.model_turns)],
    ['tool calls', String(s.tool_calls)],
    ['approvals', String(s.approvals)],
    ['customer answers', String(s.answers)],
    [
      'faults injected',
      s.chaos
        ? `${s.faults_injected} (kills ${s.chaos.kills}, duplicated ${s.chaos.duplicated}, delayed ${s.chaos.delayed}, lease expiries ${s.chaos.expired})`
        : '0 (chaos off)',
    ],
    ['recoveries (takeovers)', String(s.recoveries)],
    ['abandoned calls (outcome_unknown)', String(s.outcome_unknown)],
    ...liveRows(s.live),
    ['wall time', `${(s.wall_ms / 1000).toFixed(1)} s`],
    ['operations per second', String(s.operations_per_second)],
    ['peak memory (RSS)', `${s.peak_rss_mb} MB`],
    ...costRows(s.cost),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const valueWidth = Math.max(...rows.map(([, v]) => v.length));
  const line = `+-${'-'.repeat(width)}-+-${'-'.repeat(valueWidth)}-+`;
  return [line, ...rows.map(([k, v]) => `| ${k.padEnd(width)} | ${v.padStart(valueWidth)} |`), line];
}
