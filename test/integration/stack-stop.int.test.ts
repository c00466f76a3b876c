/**
 * The local stack stops as a whole: SIGTERM to the foreground stack stops
 * DynamoDB Local's Java process too; so does a SIGKILL of the stack (its reaper sees the pipe
 * close); and a stack whose parent died (npm killed) stops by itself. fauxqs, the poller and the
 * socket servers run inside the stack's process, so they end with it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const FIXTURE = fileURLToPath(new URL('../fixtures/local/foreground-stack.ts', import.meta.url));
/** Generous: Java may take a while to stop on a busy machine. */
const GONE_WITHIN_MS = 30_000;

const spawned: ChildProcess[] = [];
const pids: number[] = [];

afterEach(() => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  for (const child of spawned.splice(0)) child.kill('SIGKILL');
});

/** True while `pid` names a process that has not exited (a zombie counts as exited). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
  try {
    // Linux: an exited child not yet reaped by its (new) parent is a zombie, state Z.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true; // no /proc (macOS): kill(pid, 0) said it exists
  }
}

/** Resolves once `pid` has exited; rejects after GONE_WITHIN_MS. */
async function gone(pid: number): Promise<void> {
  const deadline = Date.now() + GONE_WITHIN_MS;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still running after ${GONE_WITHIN_MS} ms`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

/** Spawns `command args`, which runs the fixture; resolves with the pids it printed once ready. */
async function startStack(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; pid: number; dynamoPid: number }> {
  const { npm_lifecycle_event: _event, npm_command: _command, ...outside } = process.env;
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...outside, PARENT_CHECK_MS: '200', ...env },
  });
  spawned.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  for await (const line of lines) {
    lines.close();
    const ready = JSON.parse(line) as { pid: number; dynamo_pid: number };
    pids.push(ready.pid, ready.dynamo_pid);
    return { child, pid: ready.pid, dynamoPid: ready.dynamo_pid };
  }
  throw new Error('the stack printed nothing: it did not start');
}

const exitOf = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      done({ code: child.exitCode, signal: child.signalCode });
    } else child.once('exit', (code, signal) => done({ code, signal }));
  });

describe('the foreground local stack stops as a whole', { timeout: 90_000 }, () => {
  it('SIGTERM stops the stack cleanly (exit 0) and DynamoDB Local with it', async () => {
    const stack = await startStack(process.execPath, [FIXTURE]);
    expect(alive(stack.dynamoPid)).toBe(true);
    const exited = exitOf(stack.child);
    stack.child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    await gone(stack.dynamoPid);
  });

  it('SIGINT does the same', async () => {
    const stack = await startStack(process.execPath, [FIXTURE]);
    const exited = exitOf(stack.child);
    stack.child.kill('SIGINT');
    expect(await exited).toEqual({ code: 0, signal: null });
    await gone(stack.dynamoPid);
  });

  it('a SIGKILLed stack leaves no DynamoDB Local behind', async () => {
    const stack = await startStack(process.execPath, [FIXTURE]);
    const exited = exitOf(stack.child);
    stack.child.kill('SIGKILL');
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    await gone(stack.dynamoPid);
  });

  it.skipIf(process.platform === 'win32')(
    'a stack whose parent is SIGKILLed (npm -> sh -> node) stops by itself, Java included',
    async () => {
      // `; :` keeps sh as the stack's parent (no exec of the last command), like npm's sh -c.
      const stack = await startStack('sh', ['-c', `"${process.execPath}" "${FIXTURE}"; :`]);
      expect(stack.pid).not.toBe(stack.child.pid);
      stack.child.kill('SIGKILL');
      await gone(stack.pid);
      await gone(stack.dynamoPid);
    },
  );

  it.skipIf(process.platform === 'win32')(
    'a stack under an npm script stops once npm is SIGKILLed, though the script shell lives on',
    async () => {
      // The outer sh stands for npm, the inner one for the script's `sh -c`, which outlives it.
      const script = `"${process.execPath}" "${FIXTURE}"; :`;
      const stack = await startStack('sh', ['-c', `sh -c '${script}'; :`], { npm_lifecycle_event: 'start' });
      stack.child.kill('SIGKILL');
      await gone(stack.pid);
      await gone(stack.dynamoPid);
    },
  );
});
