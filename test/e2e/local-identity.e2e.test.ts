/**
 * The local stack's identity across restarts: started twice with the same
 * data folder (`npm start -- --persist DIR`), it keeps its signing key and the default user's
 * token, so the CLI state, scripts and the console keep working; the banner says who the token
 * is, where it is kept, the data folder, the model functions and the tools.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../lib/client/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { bannerLines } from '../../lib/local/banner.ts';
import { agentRunsDirOf, TOKEN_FILE } from '../../lib/local/identity.ts';
import { createEphemeralIssuer, ISSUER_KEY_FILE } from '../../lib/local/issuer.ts';
import { registerSampleTools } from '../../lib/local/sample-tools.ts';
import {
  type LocalStackOptions,
  runLocalStack,
  START_STEPS,
  startLocalStack,
} from '../../lib/local/stack.ts';

const dir = mkdtempSync(join(tmpdir(), 'agent-runs-identity-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const options = (persistDir?: string): LocalStackOptions => ({
  port: 0,
  stateDir: false,
  logger: SILENT_LOG,
  sweepIntervalMs: 0,
  pollerConcurrency: 0,
  consoleDir: false,
  registerTools: registerSampleTools,
  ...(persistDir !== undefined ? { persistDir } : {}),
});

describe('the local stack’s identity', () => {
  it('keeps the signing key and the default user’s token across a restart with the same data folder', async () => {
    // Prepare: a first start, and a run made with its token.
    const first = await startLocalStack(options(dir));
    const token = first.token;
    let runId: string;
    try {
      expect(first.identity).toMatchObject({
        user: 'local-user',
        kept: false,
        tokenFile: join(dir, TOKEN_FILE),
      });
      const { run } = await createClient({ baseUrl: first.url, token }).createRun({
        subject: { workspace: 'identity', path: `/restart/${Date.now()}` },
        input: null,
      });
      runId = run.run_id;
    } finally {
      await first.stop();
    }

    // Act: start again over the same folder.
    const second = await startLocalStack(options(dir));
    try {
      // Assess: the same token, still accepted, reading the run made before the restart.
      expect(second.token).toBe(token);
      expect(second.identity.kept).toBe(true);
      const again = await createClient({ baseUrl: second.url, token }).getRun(runId);
      expect(again.principal).toMatchObject({ kind: 'user', id: 'local-user' });
      // Owner-only files.
      expect(statSync(join(dir, TOKEN_FILE)).mode & 0o777).toBe(0o600);
      expect(statSync(join(agentRunsDirOf(null), ISSUER_KEY_FILE)).mode & 0o777).toBe(0o600);
      const banner = (await bannerLines(second, options(dir))).join('\n');
      expect(banner).toContain(`  url:    ${second.url}`);
      expect(banner).toContain(`  token:  ${token}`);
      expect(banner).toContain(
        `(user local-user, admin; kept from the last start, kept in ${join(dir, TOKEN_FILE)})`,
      );
      expect(banner).toContain(`  data:   ${dir}`);
      expect(banner).toMatch(/ {2}models: /);
      expect(banner).toContain('  tools:  echo, wait_for_callback');
    } finally {
      await second.stop();
    }
  }, 120_000);

  it('refuses a token of another stack, gives an in-memory stack a new token each start, and reports its start-up steps', async () => {
    // Started as `npm start` does, with its output on a pipe: progress lines, then the banner.
    const printed: string[] = [];
    const memory = await runLocalStack({
      ...options(),
      print: (line) => printed.push(line),
      progress: true,
      exitOnStop: false,
    });
    try {
      expect(memory.identity).toMatchObject({ kept: false, tokenFile: null });
      const other = await createClient({ baseUrl: memory.url, token: memory.token }).listRuns({
        status: 'queued',
      });
      expect(other.runs).toEqual([]); // a fresh in-memory stack holds no run
      // The same claims, signed by another issuer's key.
      const forged = await (await createEphemeralIssuer()).sign({ sub: 'local-user', admin: true });
      const stranger = createClient({ baseUrl: memory.url, token: forged });
      await expect(stranger.listRuns({ status: 'queued' })).rejects.toMatchObject({ status: 401 });
      const banner = (await bannerLines(memory, options())).join('\n');
      expect(banner).toContain('a new token each start: pass --persist DIR to keep it');
      expect(banner).toContain('  data:   in memory');
      // Its commands as `npm start` users type them, or as the CLI that started it was run.
      expect(banner).toContain('          npx agent-runs watch RUN_ID');
      const viaScript = (await bannerLines(memory, { ...options(), cli: 'npm run agent-runs --' })).join(
        '\n',
      );
      expect(viaScript).toContain('  try:    npm run agent-runs -- runs create --workspace demo');
      expect(viaScript).toContain('          npm run agent-runs -- watch RUN_ID');
      expect(printed[0]).toBe(`start: 0/${START_STEPS} steps`);
      expect(printed).toContainEqual(
        expect.stringMatching(/^start: 2\/5 steps \(40%\), DynamoDB Local and fauxqs up$/),
      );
      expect(printed).toContainEqual('start: 5/5 steps (100%), live event stream serving');
      // A few steps of unlike length: no rate, no time left.
      expect(printed.filter((l) => /\/s\b| left\b/.test(l) && l.startsWith('start:'))).toEqual([]);
      expect(printed.findIndex((l) => l.startsWith('agent-runs local stack ready'))).toBe(START_STEPS + 1);
    } finally {
      await memory.stop();
    }
  }, 120_000);
});
