/**
 * Child processes of the peer bench: a worker program started with `node`, waited for until it
 * prints its ready line, killed with SIGKILL and started again (the crash phase), stopped with
 * SIGTERM at the end. Issue 19, "A crash in the middle".
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { preciseNow, prng } from './workload.ts';

/** Installs a Debian package with apt-get (as .ci/run installs Java); throws when apt-get fails. */
export function aptGetInstall(pkg: string, why: string): void {
  console.log(`bench:peers: ${why}; installing the Debian package ${pkg}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', pkg],
  ]) {
    const out = spawnSync('apt-get', args, { env, stdio: 'inherit' });
    if (out.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${out.status})`);
  }
}

/** A port the OS says is free on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', done);
  });
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address for a free port');
  return address.port;
}

export interface WorkerOptions {
  /** What the process is, in messages. */
  name: string;
  /** The program and its arguments, after `node`. */
  args: string[];
  env?: Record<string, string>;
  /** The process is ready once a line of its stdout starts with this. */
  readyPrefix: string;
  /** Milliseconds to wait for the ready line (default 60 000). */
  readyTimeoutMs?: number;
}

/** A worker program that can be killed and started again; `generation` counts starts. */
export class WorkerProcess {
  private child: ChildProcess | null = null;
  private tail = '';
  generation = 0;
  /** The ready line of the current process (after `readyPrefix`). */
  readyLine = '';
  private readonly options: WorkerOptions;
  constructor(options: WorkerOptions) {
    this.options = options;
  }

  /** Starts the program and resolves once it printed its ready line; throws with its output if it exits first. */
  async start(): Promise<void> {
    const o = this.options;
    // BENCH_WORKER_NODE_OPTIONS: extra node flags for every worker (e.g. --cpu-prof to profile one).
    const flags = (process.env.BENCH_WORKER_NODE_OPTIONS ?? '').split(' ').filter((f) => f !== '');
    const child = spawn(process.execPath, [...flags, ...o.args], {
      env: { ...process.env, ...o.env },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    this.generation += 1;
    this.tail = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${o.name} not ready in ${o.readyTimeoutMs ?? 60_000} ms:\n${this.tail}`)),
        o.readyTimeoutMs ?? 60_000,
      );
      let buffer = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        this.tail = (this.tail + text).slice(-8_000);
        buffer += text;
        for (const line of buffer.split('\n').slice(0, -1)) {
          if (line.startsWith(o.readyPrefix)) {
            this.readyLine = line.slice(o.readyPrefix.length).trim();
            clearTimeout(timer);
            resolve();
          }
        }
        buffer = buffer.slice(buffer.lastIndexOf('\n') + 1);
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        this.tail = (this.tail + chunk.toString('utf8')).slice(-8_000);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new Error(`${o.name} exited (code ${code}, signal ${signal}) before it was ready:\n${this.tail}`),
        );
      });
    });
  }

  /** Sends a message over the IPC channel and resolves with the first answer. */
  ask<T>(message: unknown, timeoutMs = 10_000): Promise<T> {
    const child = this.child;
    if (child === null) return Promise.reject(new Error(`${this.options.name} is not running`));
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.options.name} did not answer`)), timeoutMs);
      child.once('message', (answer) => {
        clearTimeout(timer);
        resolve(answer as T);
      });
      child.send(message as never);
    });
  }

  /** SIGKILL; resolves with the kill's time (epoch ms) once the process is gone. */
  async kill(): Promise<number> {
    const child = this.child;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return preciseNow();
    const gone = new Promise<void>((done) => child.once('exit', () => done()));
    const at = preciseNow();
    child.kill('SIGKILL');
    await gone;
    return at;
  }

  /** SIGTERM, then SIGKILL after `graceMs`. Idempotent. */
  async stop(graceMs = 5_000): Promise<void> {
    const child = this.child;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((done) => child.once('exit', () => done()));
    const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.kill('SIGTERM');
    await gone;
    clearTimeout(force);
  }

  /** The current process's pid (undefined before the first start). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last 8 KB its stdout and stderr printed. */
  output(): string {
    return this.tail;
  }
}

export interface CrashPlan {
  /** How many times to kill the worker. */
  kills: number;
  seed: number;
}

/**
 * The share of the workload's step executions after which each kill comes: the k-th of n kills
 * at (k + 0.5 ± 0.25) / (n + 1), the jitter drawn from `seed`. Tied to progress, not to time, so
 * that a fast system and a slow one are killed at the same points of the same workload.
 */
export function killPoints(plan: CrashPlan): number[] {
  const random = prng(plan.seed);
  return Array.from({ length: plan.kills }, (_, k) => (k + 0.5 + 0.5 * (random() - 0.5)) / (plan.kills + 1));
}

/**
 * Kills `worker` with SIGKILL at each of `killPoints(plan)` (once `executed()` reaches that share
 * of `total`) and starts it again at once, until `done` settles or the kills are spent.
 * Resolves with the kill times (epoch ms) and each restart's duration (kill to ready, ms).
 */
export async function killRepeatedly(
  worker: WorkerProcess,
  plan: CrashPlan,
  progress: { executed(): number; total: number },
  done: Promise<unknown>,
): Promise<{ kills: number[]; restart_ms: number[] }> {
  let finished = false;
  void done.then(
    () => {
      finished = true;
    },
    () => {
      finished = true;
    },
  );
  const kills: number[] = [];
  const restarts: number[] = [];
  for (const point of killPoints(plan)) {
    while (!finished && progress.executed() < point * progress.total) await sleep(20);
    if (finished) break;
    const at = await worker.kill();
    kills.push(at);
    await worker.start();
    restarts.push(preciseNow() - at);
  }
  return { kills, restart_ms: restarts.map((x) => Math.round(x)) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
