/**
 * The docs are tested: every `sh` block of README.md and docs/guides/*.md
 * runs as a bash script and every `http` block is sent with fetch, against one local stack
 * started as `npm start` starts it (bin/start.ts, in a scratch directory, port 0); blocks marked
 * `<!-- doc-test: ... -->` are compared with what they claim to be (test/support/doc-blocks.ts);
 * blocks marked `<!-- not-tested: reason -->` are left out, and test/unit/doc-blocks.test.ts
 * fails for a block that is neither run nor marked.
 *
 * How a shell block runs: in a scratch directory that mirrors the repository (a symlink per
 * top-level entry), so a block that writes `state.json` leaves the worktree alone; with
 * AGENT_RUNS_URL / AGENT_RUNS_TOKEN / AGENT_RUNS_WS_URL of the test's stack (what the state file
 * would give); a line `npm start` is the test's stack and is dropped; `npx agent-runs` runs the
 * package's bin (bin/agent-runs.mjs) directly, skipping npm's start-up of about 1 s per command.
 * Pages run one after another, each from a stack without a tool policy (as after `npm start`).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allDocBlocks,
  type DocBlock,
  docBlocks,
  matchesOutput,
  mismatches,
  parseExpected,
  parseHttpExample,
  substitute,
  testedPages,
} from '../support/doc-blocks.ts';

const exec = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const scratch = mkdtempSync(join(tmpdir(), 'agent-runs-docs-'));
const stackDir = mkdtempSync(join(tmpdir(), 'agent-runs-docs-stack-'));
let stack: ChildProcess | undefined;
let local: { url: string; token: string; ws_url: string };

async function until<T>(what: string, read: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  for (const entry of readdirSync(ROOT)) {
    if (!entry.startsWith('.')) symlinkSync(join(ROOT, entry), join(scratch, entry));
  }
  stack = spawn(process.execPath, [join(ROOT, 'bin/start.ts'), '--port', '0', '--log-level', 'silent'], {
    cwd: stackDir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const stateFile = join(stackDir, '.agent-runs/local.json');
  local = await until('the local stack', () => {
    if (stack?.exitCode !== null) throw new Error(`the local stack exited (${stack?.exitCode})`);
    if (!existsSync(stateFile)) return undefined;
    try {
      return JSON.parse(readFileSync(stateFile, 'utf8')) as typeof local;
    } catch {
      return undefined; // being written
    }
  });
}, 90_000);

afterAll(async () => {
  if (stack !== undefined && stack.exitCode === null) {
    const exited = new Promise((r) => stack?.once('exit', r));
    stack.kill('SIGTERM');
    await exited;
  }
  rmSync(scratch, { recursive: true, force: true });
  rmSync(stackDir, { recursive: true, force: true });
}, 30_000);

function environment(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_')));
  return {
    ...env,
    PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
    AGENT_RUNS_URL: local.url,
    AGENT_RUNS_TOKEN: local.token,
    AGENT_RUNS_WS_URL: local.ws_url,
  };
}

/** The bash script of a shell block: `npm start` lines dropped, `npx agent-runs` straight to the bin. */
function script(block: DocBlock): string {
  const lines = block.body.split('\n').filter((line) => !/^npm start(\s+#.*)?$/.test(line.trim()));
  const npx = `npx() { if [ "$1" = agent-runs ]; then shift; node ${join(ROOT, 'bin/agent-runs.mjs')} "$@"; else command npx "$@"; fi; }`;
  return [npx, ...lines].join('\n');
}

async function runShell(block: DocBlock): Promise<string> {
  try {
    const { stdout } = await exec('bash', ['-e', '-o', 'pipefail', '-c', script(block)], {
      cwd: scratch,
      env: environment(),
      timeout: 45_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const failed = err as { stdout?: string; stderr?: string; code?: number; signal?: string };
    throw new Error(
      `${block.file}:${block.line}: the block exited ${failed.code ?? failed.signal}\n--- stdout\n${failed.stdout}\n--- stderr\n${failed.stderr}`,
    );
  }
}

async function api(
  method: string,
  path: string,
  body: string | null,
): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${local.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${local.token}`, 'content-type': 'application/json' },
    ...(body !== null ? { body } : {}),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? null : JSON.parse(text) };
}

async function runHttp(block: DocBlock, vars: Map<string, unknown>): Promise<void> {
  const example = parseHttpExample(block);
  const { status, json } = await api(
    example.method,
    substitute(example.path, vars),
    example.body === null ? null : substitute(example.body, vars),
  );
  const where = `${block.file}:${block.line}: ${example.method} ${example.path}`;
  expect(status, `${where} answered ${JSON.stringify(json)}`).toBe(example.status);
  if (example.expected !== null) {
    expect(
      mismatches(parseExpected(example.expected), json, vars),
      `${where}: ${JSON.stringify(json)}`,
    ).toEqual([]);
  }
}

/** What checks `block`, or null for a block the test leaves out. */
function check(block: DocBlock, previousOutput: () => string | undefined, vars: Map<string, unknown>) {
  const marker = block.marker;
  if (marker?.kind === 'not-tested') return null;
  if (marker?.kind === 'output')
    return async () => {
      const output = previousOutput();
      expect(output, `${block.file}:${block.line}: no block ran before this output`).toBeDefined();
      expect(matchesOutput(block.body, output ?? ''), `got:\n${output}`).toBe(true);
    };
  if (marker?.kind === 'same-as' || marker?.kind === 'excerpt-of')
    return async () => {
      const text = readFileSync(join(ROOT, marker.path), 'utf8');
      if (marker.kind === 'same-as' && marker.path.endsWith('.md')) {
        const strip = (body: string) =>
          script({ ...block, body })
            .split('\n')
            .slice(1)
            .join('\n');
        const bodies = docBlocks(marker.path, text).map((b) => strip(b.body));
        expect(bodies).toContain(strip(block.body));
      } else if (marker.kind === 'same-as') {
        expect(block.body.trimEnd()).toBe(text.trimEnd());
      } else {
        const lines = text.split('\n').map((l) => l.trim());
        let at = 0;
        for (const line of block.body.split('\n').map((l) => l.trim())) {
          if (line === '') continue;
          const found = lines.indexOf(line, at);
          expect(
            found,
            `${block.file}:${block.line}: "${line}" is not in ${marker.path} (in order)`,
          ).toBeGreaterThan(-1);
          at = found + 1;
        }
      }
    };
  if (block.lang === 'sh') return async () => runShell(block);
  if (block.lang === 'http') return async () => runHttp(block, vars);
  return null; // neither run nor marked: test/unit/doc-blocks.test.ts fails for it
}

/** The pages with a block to run or compare (a page whose blocks are all not-tested has none). */
const checkedPages = testedPages(ROOT).filter((file) =>
  allDocBlocks(ROOT).some((b) => b.file === file && b.marker?.kind !== 'not-tested'),
);

describe.each(checkedPages)('%s', (file) => {
  const blocks = allDocBlocks(ROOT).filter((b) => b.file === file);
  const vars = new Map<string, unknown>();
  let lastOutput: string | undefined;

  beforeAll(async () => {
    // Each page from a stack without a tool policy, as after `npm start`.
    expect((await api('POST', '/admin/policy', '{"rules": []}')).status).toBeLessThan(300);
  });

  const checks = blocks.map((block) => ({ block, run: check(block, () => lastOutput, vars) }));
  for (const { block, run } of checks.filter((c) => c.run !== null)) {
    it(`line ${block.line} (${block.marker?.kind ?? block.lang})`, async () => {
      const output = await run?.();
      if (typeof output === 'string') lastOutput = output;
    }, 60_000);
  }
});
