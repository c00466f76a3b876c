import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localReplayStack } from '../../lib/replay/local.ts';
import { runReplay } from '../../lib/replay/run-replay.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

const DATA = TAU_BENCH_DIR;
const FILE = join(DATA, 'trajectories.json');
const TOOLS = join(DATA, 'tools.json');
const quiet = () => {};

describe('replay of recorded airline conversations on the local stack', () => {
  it('reproduces 10 conversations exactly, and prints what each run cost', async () => {
    const lines: string[] = [];
    const report = await runReplay({
      file: FILE,
      toolsFile: TOOLS,
      limit: 10,
      concurrency: 10,
      startStack: localReplayStack(),
      out: (line) => lines.push(line),
    });
    expect(report.conversations.filter((c) => !c.identical)).toEqual([]);
    // Cost per run: every run's view carried its cost; the recorded GPT-4o
    // tokens and the AWS requests the runtime made, per run and per 1M operations.
    expect(report.summary.cost).toMatchObject({ runs: 10, model: 'gpt-4o', region: 'us-east-1' });
    expect(report.summary.cost?.aws_per_run_usd).toBeGreaterThan(0);
    expect(report.summary.cost?.aws_lines.dynamodb_usd).toBeGreaterThan(0);
    expect(report.summary.cost?.per_million_operations_usd).toBeGreaterThan(0);
    expect(lines.join('\n')).toMatch(
      /\| cost per run \(us-east-1 prices of \d{4}-\d{2}-\d{2}\) +\| +\$\d+\.\d{6} \(AWS \$/,
    );
    expect(lines.join('\n')).toMatch(/\| cost per 1M operations +\| +\$\d+\.\d{2} \(AWS \$\d+\.\d{2}\) \|/);
    expect(report.summary).toMatchObject({ conversations: 10, identical: 10, diverged: 0 });
    expect(report.summary.approvals).toBeGreaterThan(0);
    for (const c of report.conversations) expect(c.status).toBe(c.expected_status);
  }, 300_000);

  it('reproduces 10 conversations exactly while workers crash, messages repeat and leases expire', async () => {
    const report = await runReplay({
      file: FILE,
      toolsFile: TOOLS,
      limit: 10,
      concurrency: 10,
      chaos: true,
      seed: 7,
      startStack: localReplayStack(),
      out: quiet,
    });
    expect(report.conversations.filter((c) => !c.identical)).toEqual([]);
    expect(report.summary.faults_injected).toBeGreaterThan(0);
    expect(report.summary.chaos?.kills).toBeGreaterThan(0);
    expect(report.summary.recoveries).toBeGreaterThan(0);
  }, 600_000);

  it('reports a conversation whose recorded tool argument was altered as diverged at that message', async () => {
    const trajectories = JSON.parse(await readFile(FILE, 'utf8')) as {
      traj: { role: string; tool_calls?: { function: { arguments: string } }[] }[];
    }[];
    const first = trajectories[0];
    if (first === undefined) throw new Error('no data');
    const position = first.traj.findIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
    const call = first.traj[position]?.tool_calls?.[0];
    if (call === undefined) throw new Error('no tool call to alter');
    const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
    const key = Object.keys(args)[0] ?? 'user_id';
    call.function.arguments = JSON.stringify({ ...args, [key]: `${String(args[key])}-altered` });
    const dir = await mkdtemp(join(tmpdir(), 'altered-'));
    const altered = join(dir, 'trajectories.json');
    await writeFile(altered, JSON.stringify([first]));

    const report = await runReplay({
      file: FILE,
      modelFile: altered,
      toolsFile: TOOLS,
      limit: 1,
      startStack: localReplayStack(),
      out: quiet,
    });

    expect(report.summary.diverged).toBe(1);
    const difference = report.conversations[0]?.first_difference;
    expect(difference?.position).toBe(position);
    expect(JSON.stringify(difference?.got)).toContain('-altered');
  }, 300_000);
});
