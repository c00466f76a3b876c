/**
 * What `npm run client:check` (bin/client-package-check.ts) and `npm run ai-sdk:check`
 * (bin/ai-sdk-package-check.ts) share: timed progress lines, a synchronous command runner, the
 * ```ts samples of a README, and a local stack started in a folder of its own and stopped at the
 * end.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** `label elapsed text` progress lines and a runner that throws on a non-zero exit (stderr shown). */
export function checkSteps(label: string) {
  const started = performance.now();
  return {
    step: (text: string) =>
      console.log(`${label} ${((performance.now() - started) / 1000).toFixed(1)}s ${text}`),
    run: (command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) =>
      execFileSync(command, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }),
  };
}

/** The ```ts blocks of a Markdown text, each with the lines its `// prints: ` comments name. */
export function tsBlocks(markdown: string): { code: string; prints: string[] }[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => {
    const code = m[1] as string;
    const prints = [...code.matchAll(/^\/\/ prints: (.*)$/gm)].map((p) => (p[1] as string).trim());
    return { code, prints };
  });
}

/** A local stack (`agent-runs start --port 0 --json`) in `dir`, and how to stop it. */
export interface CheckStack {
  url: string;
  token: string;
  /** Sends SIGTERM and waits for the exit; idempotent. */
  stop(): Promise<void>;
}

/** Starts the local stack of the repository at `root` in `dir`; rejects if it exits first. */
export function startCheckStack(root: string, dir: string): Promise<CheckStack> {
  mkdirSync(dir, { recursive: true });
  const child: ChildProcess = spawn(
    process.execPath,
    [join(root, 'bin/agent-runs.ts'), 'start', '--port', '0', '--json', '--log-level', 'silent'],
    { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{') && l.includes('"token"'));
      if (line !== undefined) resolve({ ...(JSON.parse(line) as { url: string; token: string }), stop });
    });
    child.once('exit', (code) => reject(new Error(`the local stack exited (${code}) before it was ready`)));
  });
}
