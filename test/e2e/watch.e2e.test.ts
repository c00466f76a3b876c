/**
 * `agent-runs watch RUN` driven as a person would, in a real terminal: tmux runs the CLI in a
 * detached session against the local stack, the test types keys (send-keys) and reads the screen
 * (capture-pane). One conversation run goes through an approval (its subject summary and digest
 * on screen), a question answered, a steer, a pause, a resume and a stop, each ack shown. CI
 * installs tmux (.ci/run); without tmux locally the test is skipped and says so.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import {
  DEFAULT_MODEL_TURN_FUNCTION,
  type ModelTurnInput,
  type ModelTurnOutput,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { untilRun } from '../support/http-runs.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function tmuxVersion(): string | null {
  try {
    return execFileSync('tmux', ['-V'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}
const TMUX = tmuxVersion();
if (TMUX === null) {
  console.warn(
    'watch.e2e: tmux is not installed, so the terminal test of `agent-runs watch` is skipped (apt-get install tmux)',
  );
}

/** Subjects whose run has asked for its charge already. */
const charged = new Set<string>();

/** The scripted model: a charge that needs approval first, then a question after every turn. */
async function scriptedModel(input: ModelTurnInput): Promise<ModelTurnOutput> {
  const usage = { input_tokens: 10, output_tokens: 5 };
  if (!charged.has(input.subject.path)) {
    charged.add(input.subject.path);
    return {
      message: {},
      tool_calls: [{ call_id: 'c1', name: 'charge', args: { amount: 42 } }],
      finish_reason: 'tool_calls',
      usage,
    };
  }
  return { message: { text: 'Which color should it be?' }, tool_calls: [], finish_reason: 'stop', usage };
}

let stack: LocalStack;
let client: AgentRunsClient;
const socket = `agent-runs-watch-${process.pid}`;
const session = 'watch';
const dir = mkdtempSync(join(tmpdir(), 'agent-runs-watch-'));

const tmux = (...args: string[]) => run('tmux', ['-L', socket, ...args], { cwd: dir });
const screen = async () => (await tmux('capture-pane', '-p', '-J', '-t', session)).stdout;
const keys = (...k: string[]) => tmux('send-keys', '-t', session, ...k);

/** Reads the screen every 200 ms until it holds `text`; throws with the last screen after `timeoutMs`. */
async function untilScreen(text: string | RegExp, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    last = await screen();
    if (typeof text === 'string' ? last.includes(text) : text.test(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the screen never showed ${String(text)}; it shows:\n${last}`);
}

beforeAll(async () => {
  if (TMUX === null) return;
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    heartbeatMs: 300,
    sweepIntervalMs: 1_000,
    consoleDir: false,
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: (input) => scriptedModel(input) },
    registerTools(registry) {
      registry.register({
        name: 'charge',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: true, replay_safe: false, approval: 'always', risk: 'high' },
        handler: { kind: 'module', fn: async (args) => ({ charged: args.amount }) },
      });
    },
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
}, 60_000);

afterAll(async () => {
  if (TMUX !== null) await tmux('kill-server').catch(() => undefined); // already gone when the view quit
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('agent-runs watch in a terminal', () => {
  it.skipIf(TMUX === null)(
    'shows the run live and approves, answers, steers, pauses, resumes and stops it with keys, each ack on screen',
    async () => {
      // Prepare: a run waiting for approval of its charge.
      const { run: created } = await client.createRun({
        subject: { workspace: 'watch', path: `/colors/${randomUUID()}` },
        reducer: { function_path: AGENT_LOOP_PATH },
        input: 'charge 42, then ask me',
        context: {
          mode: 'conversation',
          tools: [{ name: 'charge', schema: { type: 'object' }, mutating: true, replay_safe: false }],
        },
      });
      const id = created.run_id;
      const waiting = await untilRun(client, id, (r) => r.open_requests[0]?.kind === 'approval', 30_000);
      const approval = waiting.open_requests[0] as Extract<
        RunRecord['open_requests'][number],
        { kind: 'approval' }
      >;
      const env = [
        'CI=0',
        `AGENT_RUNS_URL=${stack.url}`,
        `AGENT_RUNS_TOKEN=${stack.token}`,
        `AGENT_RUNS_WS_URL=${stack.wsUrl}`,
      ];
      const command = `env ${env.join(' ')} ${process.execPath} ${join(ROOT, 'bin/agent-runs.ts')} watch ${id}`;

      // Act and assess, key by key.
      await tmux('new-session', '-d', '-s', session, '-x', '220', '-y', '60', command);
      const first = await untilScreen(approval.subject.digest);
      expect(first).toContain(`approval ${approval.request_id}: ${approval.subject.summary}`);
      expect(first).toContain('WAITING');
      expect(first).toContain('a approve · r reject');
      expect(first).toMatch(/live: websocket/);

      await keys('a');
      await untilScreen(`approve ${approval.request_id}: applied (seq`);
      await untilScreen('question '); // the charge ran; the model asks
      const asked = await untilRun(client, id, (r) => r.open_requests[0]?.kind === 'input', 30_000);
      const question = asked.open_requests[0]?.request_id ?? '';

      await keys('n');
      await untilScreen('answer>');
      await keys('-l', 'blue');
      await untilScreen('answer> blue'); // typed, as a person sees it before pressing Enter
      await keys('Enter');
      await untilScreen(`answer ${question}: applied (seq`);

      await keys('s');
      await untilScreen('steer>');
      await keys('-l', 'make it green');
      await untilScreen('steer> make it green');
      await keys('Enter');
      await untilScreen('steer: applied (seq');

      await keys('p');
      await untilScreen('pause: applied (seq');
      await untilScreen('PAUSED');
      await keys('u');
      await untilScreen('resume: applied (seq');

      await keys('x');
      await untilScreen('stop the run? y to stop');
      await keys('y');
      await untilScreen('stop: applied (seq');
      await untilScreen('STOPPED');
      expect((await client.getRun(id)).status).toBe('stopped');

      // The events the run wrote are on screen as they came.
      const last = await untilScreen('run stopped: press q to quit');
      expect(last).toMatch(/#\s*\d+\s+\S+\s+stopped/);
      await keys('q');
    },
    180_000,
  );
});
