// Smoke test of the installed @agent-runs/client package, run by bin/client-package-check.ts in
// a fresh project against the local stack (AGENT_RUNS_URL, AGENT_RUNS_TOKEN), on Node 20 and 24.
// Exits non-zero on the first failed check, printing what failed.

import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { ApiError, createClient } from '@agent-runs/client';
import { LOCAL_STATE_PATH, readLocalState } from '@agent-runs/client/node';

const baseUrl = process.env.AGENT_RUNS_URL;
const token = process.env.AGENT_RUNS_TOKEN;
assert.ok(baseUrl && token, 'AGENT_RUNS_URL and AGENT_RUNS_TOKEN must be set');
const client = createClient({ baseUrl, token });
const checks = [];
const check = async (name, fn) => {
  await fn();
  checks.push(name);
};

await check('health', async () => assert.deepEqual(await client.health(), { status: 'ok' }));
await check('openapi has operation ids', async () => {
  const doc = await client.openapi();
  assert.equal(doc.paths['/runs'].post.operationId, 'createRun');
});
await check('tools', async () => {
  const tools = await client.tools();
  assert.ok(
    tools.some((t) => t.name === 'echo'),
    'the local stack registers echo',
  );
});
let runId;
await check('create a client-driven run', async () => {
  const subject = { workspace: 'smoke', path: `/smoke/${globalThis.crypto.randomUUID()}` };
  const created = await client.createRun({ subject, reducer: null, input: 'hello' });
  assert.equal(created.created, true);
  runId = created.run.run_id;
});
await check('stop it and follow its events to the end', async () => {
  const ack = await client.stop(runId, { reason: 'smoke test' });
  assert.equal(ack.ack, 'applied');
  const kinds = [];
  for await (const event of client.followEvents(runId, { wait: 2 })) kinds.push(event.kind);
  assert.ok(kinds.includes('run_started'), kinds.join(','));
  assert.equal((await client.getRun(runId)).status, 'stopped');
});
await check('errors carry the API code', async () => {
  const error = await client.getRun('no-such-run').then(
    () => null,
    (e) => e,
  );
  assert.ok(error instanceof ApiError, String(error));
  assert.equal(error.code, 'run_not_found');
});
await check('the node entry reads no state file here', async () => {
  assert.equal(LOCAL_STATE_PATH, '.agent-runs/local.json');
  assert.equal(readLocalState(process.cwd()), null);
});
await check('the CLI lists and reads runs', async () => {
  const out = execFileSync(
    process.execPath,
    ['node_modules/.bin/agent-runs', 'runs', 'get', runId, '--json'],
    {
      encoding: 'utf8',
    },
  );
  assert.equal(JSON.parse(out).status, 'stopped');
  const help = execFileSync(process.execPath, ['node_modules/.bin/agent-runs', '--help'], {
    encoding: 'utf8',
  });
  assert.ok(help.includes('runs') && !help.includes('replay'), help);
});
console.log(`client smoke passed on Node ${process.version}: ${checks.join(', ')}`);
