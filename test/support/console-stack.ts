/**
 * What the console's browser tests and its benchmark share: a build of the console from the
 * current sources (vite, into a directory of the caller's), a local stack serving it with a
 * scripted model and two tools (a mutating `charge` that always needs approval, and a `slow`
 * one), and a headless Debian chromium driven by playwright-core.
 *
 * The scripted model answers from the transcript it is shown, after `MODEL_DELAY_MS` (so a
 * page can be seen to advance): no tool called yet → call `charge {amount: 42}`; after the
 * tool's result → ask which receipt format; after a user message → `Noted: <message>. Anything
 * else?`. In conversation mode each text reply is a question to the user (the default agent
 * reducer's ask_user).
 */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { build } from 'vite';
import { DEFAULT_MODEL_TURN_FUNCTION, type ModelTurnOutput } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '../../lib/local/stack.ts';
import type { ModelTurnFunction } from '../../lib/models/types.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** Where the browser tests save their screenshots (gitignored). */
export const ARTIFACTS_DIR = join(REPO, 'test-artifacts', 'console');

/** Debian's chromium (`.ci/run` installs it); CHROMIUM_PATH overrides. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The flags chromium needs on this machine: no sandbox as root, no GPU, no calls home. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** How long each scripted model turn takes (ms). */
export const MODEL_DELAY_MS = 700;

/** Builds the console from console/ into `outDir` (the same vite config `npm run console:build` uses). */
export async function buildConsole(outDir: string): Promise<void> {
  await build({
    configFile: join(REPO, 'console', 'vite.config.ts'),
    logLevel: 'error',
    build: { outDir, emptyOutDir: true },
  });
}

/** The tool descriptors a run offers its model (run_started context.tools). */
export const CONSOLE_TOOLS_CONTEXT = [
  {
    name: 'charge',
    description: 'Charges the customer.',
    schema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    mutating: true,
    replay_safe: false,
  },
  { name: 'slow', schema: { type: 'object' }, mutating: false, interruptible: true },
];

const text = (t: string): ModelTurnOutput => ({
  message: { text: t },
  tool_calls: [],
  finish_reason: 'stop',
  usage: { input_tokens: 30, output_tokens: 8 },
});

/** The scripted model described in the module header. */
export const scriptedConsoleModel: ModelTurnFunction = async (_input, context, signal) => {
  await new Promise<void>((done) => {
    const timer = setTimeout(done, MODEL_DELAY_MS);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      done();
    });
  });
  const messages = context.messages;
  const last = messages[messages.length - 1];
  const called = messages.some((m) => m.role === 'assistant' && m.tool_calls.length > 0);
  if (!called) {
    return {
      message: { text: null },
      tool_calls: [{ call_id: 'call-1', name: 'charge', args: { amount: 42 } }],
      finish_reason: 'tool_calls',
      usage: { input_tokens: 40, output_tokens: 12 },
    };
  }
  if (last?.role === 'tool') return text('Charged 42. Which receipt format do you want?');
  if (last?.role === 'user') return text(`Noted: ${last.content}. Anything else?`);
  return text('Anything else?');
};

export interface ConsoleStack {
  stack: LocalStack;
  /** Amounts `charge` was called with, in order. */
  charges: number[];
}

/** A local stack serving the console from `consoleDir`, with the scripted model and the two tools. */
export async function startConsoleStack(
  consoleDir: string,
  extra: Partial<LocalStackOptions> = {},
): Promise<ConsoleStack> {
  const charges: number[] = [];
  // A browser suite opens many pages as the stack's one user, each with its live socket (and the
  // console files run at once on one DynamoDB Local): the default bound of 8 sockets a principal
  // would turn later pages to SSE. This worker's environment only, read by the stack as in Lambda.
  process.env.AGENT_RUNS_LIVE_MAX_CONNECTIONS ??= '256';
  const stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    consoleDir,
    heartbeatMs: 1_000,
    sweepIntervalMs: 2_000,
    // A busy machine must not fail the reducer's 200 ms limit in these tests.
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: scriptedConsoleModel },
    registerTools(registry) {
      registry.register({
        name: 'charge',
        version: '1.0.0',
        input_schema: CONSOLE_TOOLS_CONTEXT[0]?.schema ?? {},
        metadata: { mutating: true, replay_safe: false, approval: 'always', risk: 'high' },
        handler: {
          kind: 'module',
          fn: async (args) => {
            charges.push(Number(args.amount));
            return { charged: args.amount, receipt: 'R-1' };
          },
        },
      });
      registry.register({
        name: 'slow',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true, timeout_ms: 60_000 },
        handler: {
          kind: 'module',
          fn: async (_args, ctx) => {
            await new Promise<void>((done) => {
              const timer = setTimeout(done, 30_000);
              ctx.signal.addEventListener('abort', () => {
                clearTimeout(timer);
                done();
              });
            });
            return { slept: true };
          },
        },
      });
    },
    ...extra,
  });
  return { stack, charges };
}

/** Headless chromium with a fresh profile (playwright-core makes one per launch). */
export async function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
}

/** Runs axe-core in the page; returns the serious and critical violations (id: first target). */
export async function axeViolations(page: Page): Promise<string[]> {
  const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
  await page.addScriptTag({ path: axePath });
  return page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    interface AxeViolation {
      id: string;
      impact?: string | null;
      nodes: { target: unknown[] }[];
    }
    const result = await axe.run();
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${JSON.stringify(v.nodes[0]?.target)}`);
  });
}
