/**
 * `agent-runs replay FILE`: replays recorded conversations as durable runs on a stack and
 * reports, per conversation, whether the runtime reproduced it exactly. Output: a progress bar,
 * one line per diverged conversation with its first difference, a summary table, a JSON report.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SingleBar } from 'cli-progress';
import { createRecordedModel } from '../models/recorded.ts';
import { loadToolsOffered, loadTrajectories } from '../models/tau-bench.ts';
import type { ModelTurnFunction } from '../models/types.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import { type Chaos, type ChaosStats, createChaos } from './chaos.ts';
import { prepareConversation, type ReplayConversation } from './conversations.ts';
import {
  type ConversationResult,
  RECORDED_MODEL_PATH,
  type ReplayApi,
  replayConversation,
} from './driver.ts';
import { createReplayWorld } from './world.ts';

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
  /** Replays the model from this file instead (tests: an altered recording against the real world). */
  modelFile?: string;
  chaos?: boolean;
  seed?: number;
  concurrency?: number;
  limit?: number;
  reportPath?: string;
  progress?: boolean;
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
  wall_ms: number;
  operations_per_second: number;
  chaos: ChaosStats | null;
}

export interface ReplayReport {
  summary: ReplaySummary;
  conversations: ConversationResult[];
}

/** Lease TTL of the replay stack: short under chaos so that takeovers happen within seconds. */
export const CHAOS_LEASE_TTL_MS = 3_000;

export async function runReplay(options: ReplayOptions): Promise<ReplayReport> {
  const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const started = Date.now();
  const trajectories = await loadTrajectories(options.file);
  const selected = options.limit !== undefined ? trajectories.slice(0, options.limit) : trajectories;
  const conversations: ReplayConversation[] = selected.map(prepareConversation);
  const modelConversations = options.modelFile
    ? (await loadTrajectories(options.modelFile)).map(prepareConversation)
    : conversations;
  const toolsJson: unknown = JSON.parse(await readFile(options.toolsFile, 'utf8'));
  const tools = await loadToolsOffered(options.toolsFile);
  const world = createReplayWorld(conversations);
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
  const bar = options.progress
    ? new SingleBar({
        format: 'replay [{bar}] {value}/{total} conversations | {diverged} diverged | {eta_formatted} left',
        hideCursor: true,
      })
    : null;
  bar?.start(conversations.length, 0, { diverged: 0 });
  const results: ConversationResult[] = [];
  let diverged = 0;
  try {
    const queue = [...conversations];
    const workers = Array.from({ length: Math.max(1, options.concurrency ?? 4) }, async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        const result = await replayConversation(stack.api, world, next, { tools });
        results.push(result);
        if (!result.identical) diverged += 1;
        bar?.increment(1, { diverged });
      }
    });
    await Promise.all(workers);
  } finally {
    bar?.stop();
    await stack.stop();
  }
  results.sort(
    (a, b) =>
      conversations.findIndex((c) => c.key === a.key) - conversations.findIndex((c) => c.key === b.key),
  );
  for (const r of results) if (!r.identical) out(divergenceLine(r));
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
    wall_ms: wall,
    operations_per_second: Math.round((operations / (wall / 1000)) * 10) / 10,
    chaos: chaos ? chaos.stats : null,
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
    ['wall time', `${(s.wall_ms / 1000).toFixed(1)} s`],
    ['operations per second', String(s.operations_per_second)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const valueWidth = Math.max(...rows.map(([, v]) => v.length));
  const line = `+-${'-'.repeat(width)}-+-${'-'.repeat(valueWidth)}-+`;
  return [line, ...rows.map(([k, v]) => `| ${k.padEnd(width)} | ${v.padStart(valueWidth)} |`), line];
}
