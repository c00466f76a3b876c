/**
 * The DBOS side of the peer bench: one workflow, `agent`, that makes `steps` tool calls, each a
 * `DBOS.runStep` (its output is checkpointed in PostgreSQL before the workflow goes on), in an
 * application process with a small HTTP server: `POST /runs/{id}?steps=N` starts the workflow
 * with workflow ID `{id}` (idempotent: the same ID never starts a second workflow) and answers
 * its result. DBOS recovers the pending workflows of a killed process when it launches again.
 * Config: DBOS_SYSTEM_DATABASE_URL, PORT, STEP_LOG. Prints `ready <port>`. Issue 19.
 */
import { createServer } from 'node:http';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { executeStep } from './workload.ts';

const log = process.env.STEP_LOG ?? '';
if (log === '') throw new Error('STEP_LOG is not set');

async function agentRun(run: string, steps: number): Promise<{ run: string; steps: number }> {
  for (let n = 1; n <= steps; n += 1) {
    await DBOS.runStep(async () => executeStep(log, run, n), { name: `step ${n}` });
  }
  return { run, steps };
}
const agent = DBOS.registerWorkflow(agentRun, { name: 'agent' });

DBOS.setConfig({
  name: 'bench-peers',
  systemDatabaseUrl: process.env.DBOS_SYSTEM_DATABASE_URL ?? '',
  logLevel: 'warn',
});
await DBOS.launch();

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const match = /^\/runs\/([^/]+)$/.exec(url.pathname);
  if (req.method !== 'POST' || match?.[1] === undefined) {
    res.writeHead(404).end();
    return;
  }
  const run = decodeURIComponent(match[1]);
  const steps = Number(url.searchParams.get('steps') ?? 0);
  DBOS.startWorkflow(agent, { workflowID: run })(run, steps)
    .then((handle) => handle.getResult())
    .then(
      (result) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result)),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`ready ${typeof address === 'object' && address !== null ? address.port : ''}`);
});
process.once('SIGTERM', () => {
  server.close();
  void DBOS.shutdown().then(() => process.exit(0));
});
