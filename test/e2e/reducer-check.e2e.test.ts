/**
 * `runs export` and `reducers check` over HTTP against the local stack (DynamoDB Local, fauxqs,
 * the step poller): recorded airline conversations replayed there, each run exported through
 * the API (events paged from the store's tail and pages) and checked with the default reducer
 * (identical) and with a changed artifact published at a path (exit 1 at the first tool_result
 * it answers differently).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { runCli } from '../../bin/commands/program.ts';
import { createClient } from '../../lib/client/index.ts';
import { deliveriesOf } from '../../lib/engine/upgrade/run-at-delivery.ts';
import { parseRunLog } from '../../lib/engine/upgrade/run-log.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { AGENT_LOOP_ARTIFACT_URL, readAgentLoopSource } from '../../lib/reducers/index.ts';
import { runReplay, type StartReplayStack } from '../../lib/replay/run-replay.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

const CONVERSATIONS = 3;
let stack: LocalStack | null = null;
let runIds: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'run-logs-e2e-'));

/** The local stack wired for the replay, kept running after it (the replay's stop is a no-op). */
const keptStack: StartReplayStack = async ({ registerTools, modelFunctions }) => {
  const started = await startLocalStack({ port: 0, stateDir: false, registerTools, modelFunctions });
  stack = started;
  const client = createClient({ baseUrl: started.url, token: started.token });
  return {
    api: {
      createRun: (body) => client.createRun(body as Parameters<typeof client.createRun>[0]),
      getRun: (runId) => client.getRun(runId),
      events: async (runId, after, limit, wait) =>
        (await client.events(runId, { after, limit, wait })).events,
      control: (runId, control) => client.control(runId, control as Parameters<typeof client.control>[1]),
    },
    stop: async () => {},
  };
};

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const s = stack as LocalStack;
  const code = await runCli(COMMANDS, ['--url', s.url, '--token', s.token, ...args], {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    cwd: dir,
    env: {},
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

beforeAll(async () => {
  const report = await runReplay({
    file: join(TAU_BENCH_DIR, 'trajectories.json'),
    toolsFile: join(TAU_BENCH_DIR, 'tools.json'),
    limit: CONVERSATIONS,
    concurrency: CONVERSATIONS,
    startStack: keptStack,
    out: () => {},
  });
  expect(report.conversations.filter((c) => !c.identical)).toEqual([]);
  runIds = report.conversations.map((c) => c.run_id as string);
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

describe('reducers check against the local stack', () => {
  it('exports each run and checks the default reducer identical on all of them', async () => {
    for (const [i, id] of runIds.entries()) {
      expect(await cli(['runs', 'export', id, '-o', `run-${i}.json`])).toMatchObject({ code: 0, err: '' });
      const log = parseRunLog(JSON.parse(readFileSync(join(dir, `run-${i}.json`), 'utf8')));
      expect(log.events.length).toBe(Number(log.run.last_seq));
      expect(JSON.stringify(log)).not.toContain('capability_hash');
    }
    const checked = await cli([
      'reducers',
      'check',
      '--artifact',
      fileURLToPath(AGENT_LOOP_ARTIFACT_URL),
      '--from',
      '.',
    ]);
    expect(checked.err).toBe('');
    expect(checked.code).toBe(0);
    expect(checked.out.split('\n').at(-1)).toMatch(
      new RegExp(`^${CONVERSATIONS} runs: ${CONVERSATIONS} identical, 0 diverged, 0 skipped`),
    );
  });

  it('exits 1 for a changed artifact published at a path, at the first tool_result it answers differently', async () => {
    const source = readAgentLoopSource().replace(
      'export function reduce(request) {',
      'function reduceV1(request) {',
    );
    const changed = `${source}
export function reduce(request) {
  const answer = reduceV1(request);
  if (request.event.kind === 'tool_result' && answer.refused == null && answer.state_rev !== request.state_rev) {
    answer.effects = [...answer.effects, { effect_id: answer.state_rev + ':' + answer.effects.length, kind: 'checkpoint', reason: 'upgrade' }];
  }
  return answer;
}
`;
    const s = stack as LocalStack;
    const client = createClient({ baseUrl: s.url, token: s.token });
    const published = await client.putFunction('/agents/upgraded', new TextEncoder().encode(changed), 'js');
    const log = parseRunLog(JSON.parse(readFileSync(join(dir, 'run-0.json'), 'utf8')));
    const first = deliveriesOf(log.run, log.events).find(
      (d) => d.event.kind === 'tool_result' && d.recorded.kind === 'answered',
    );
    if (first === undefined) throw new Error('the first conversation has no tool result');
    const checked = await cli([
      'reducers',
      'check',
      '--path',
      '/agents/upgraded',
      '--hash',
      published.hash,
      '--run',
      log.run.run_id,
    ]);
    expect(checked.code).toBe(1);
    expect(checked.out).toContain(
      `${log.run.run_id}  diverged at seq ${first.event.seq} (answer seq ${first.recorded.seq}`,
    );
  });
});
