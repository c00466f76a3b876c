/**
 * End to end over HTTP: client-driven runs on the local stack (`npm start`), driven by the typed
 * client as an external agent loop would. Two clients compete for one run while the first one
 * crashes (a real process, killed with SIGKILL mid-operation): the second waits out the lease,
 * takes over, and the crashed client's fence is refused `fenced_out` afterwards; a stop during
 * a client's operation aborts it and ends the run `stopped`; a turn outcome of each status is
 * accepted or refused by the three rules of the turn outcome (docs/contracts/turn-outcome.md).
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases, recovery and
 * the sweeper".
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { runCli } from '../../bin/commands/program.ts';
import { type AgentRunsClient, ApiError, createClient, drive } from '../../lib/client/index.ts';
import type { Fence, RunEvent } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { untilRun } from '../support/http-runs.ts';

const CRASHING_CLIENT = fileURLToPath(new URL('../fixtures/clients/crashing-client.ts', import.meta.url));

let stack: LocalStack;
let client: AgentRunsClient;
const children: ChildProcess[] = [];

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    sweepIntervalMs: 300,
    // Client leases of a few seconds: no skew allowance on top, or the takeover waits 30 s.
    clockSkewMs: 0,
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await stack?.stop();
});

/** A client-driven run: created without a reducer. */
async function createClientDrivenRun(scenario: string): Promise<string> {
  const { run } = await client.createRun({
    subject: { workspace: 'e2e', path: `/${scenario}/${randomUUID()}` },
    input: `client-driven ${scenario}`,
  });
  expect(run.status).toBe('queued');
  return run.run_id;
}

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected the API to refuse');
}

async function allEvents(runId: string): Promise<RunEvent[]> {
  return (await client.events(runId, { after: 0, limit: 500 })).events;
}

const contiguous = (events: RunEvent[]) => events.every((e, i) => e.seq === i + 1);

/** Starts the crashing client on `runId`; resolves with the fence and op_id it printed. */
async function startCrashingClient(
  runId: string,
): Promise<{ child: ChildProcess; fence: Fence; op_id: string }> {
  const child = spawn(process.execPath, [CRASHING_CLIENT, stack.url, stack.token, runId], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  for await (const line of lines) {
    lines.close();
    return { child, ...(JSON.parse(line) as { fence: Fence; op_id: string }) };
  }
  throw new Error('the crashing client printed nothing');
}

function turnOutcome(runId: string, opId: string, fields: Record<string, unknown>): Record<string, unknown> {
  return {
    schema: 'agent.external-runtime.turn-outcome.v1',
    'outcome/ref': `outcome-${randomUUID()}`,
    'turn/ref': opId,
    'binding/ref': runId,
    'agent/id': 'agents/e2e',
    status: 'completed',
    'reason/code': 'completed',
    retryability: 'terminal',
    'budget/reserved': {},
    'budget/charged': { input_tokens: 4, output_tokens: 2 },
    'usage/fidelity': 'authoritative',
    'selected/at': '2026-12-01T00:00:00Z',
    'selected/by': 'e2e',
    ...fields,
  };
}

describe('client-driven runs over HTTP', () => {
  it('a second client takes over from one that crashed mid-operation; the zombie fence is refused fenced_out', async () => {
    const runId = await createClientDrivenRun('crash');
    const crashed = await startCrashingClient(runId);
    expect((await client.lease(runId)).lease).toMatchObject({ owner: crashed.fence.owner });

    // A competing client is refused while the first one's lease is live.
    const held = await refusal(client.takeLease(runId, { owner: 'second' }));
    expect([held.status, held.code]).toEqual([409, 'lease_held']);

    crashed.child.kill('SIGKILL');
    // The sweeper lets the expired lease go; the second client then takes the run.
    await untilRun(client, runId, (r) => r.lease === null && r.status === 'queued');
    const result = await drive(
      client,
      runId,
      async (session) => {
        const turn = await session.operation({ kind: 'model_turn' }, async () => ({
          result: {
            kind: 'model_turn_completed',
            message: { text: 'took over' },
            usage: { input_tokens: 9, output_tokens: 4 },
          },
        }));
        expect(turn).not.toBeNull();
        // The crashed client comes back as a zombie: every write with its fence is refused.
        const zombie = await refusal(
          client.reportOutcome(runId, {
            fence: crashed.fence,
            op_id: crashed.op_id,
            result: {
              kind: 'tool_result',
              envelope: { envelope: 'raisin.tool-result/1', status: 'succeeded' },
            },
          }),
        );
        expect([zombie.status, zombie.code, zombie.details.reason_code]).toEqual([
          409,
          'fenced_out',
          'session-fence-mismatch',
        ]);
        const renew = await refusal(client.takeLease(runId, { ...crashed.fence }));
        expect(renew.code).toBe('fenced_out');
        await session.complete('the second client finished');
      },
      { owner: 'second', ttlMs: 5_000 },
    );

    expect(result.run).toMatchObject({ status: 'completed', usage: { input_tokens: 9, output_tokens: 4 } });
    const events = await allEvents(runId);
    expect(contiguous(events)).toBe(true);
    const abandoned = events.find((e) => e.kind === 'operation_failed');
    expect(abandoned).toMatchObject({ operation_id: crashed.op_id, data: { outcome_unknown: true } });
    expect(events.some((e) => e.kind === 'tool_result')).toBe(false);
    expect(events.at(-1)?.kind).toBe('run_completed');
  });

  it('a stop during a client operation aborts it, and the run ends stopped when the client reports', async () => {
    const runId = await createClientDrivenRun('stop');
    let sawAbort = false;
    const result = await drive(
      client,
      runId,
      async (session) => {
        await session.operation({ kind: 'model_turn' }, async (signal) => {
          const ack = await client.stop(runId, { control_id: `stop-${randomUUID()}` });
          expect(ack.ack).toBe('applied');
          await new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => resolve(), { once: true }),
          );
          sawAbort = true;
          throw signal.reason;
        });
      },
      { ttlMs: 3_000, renewEveryMs: 200 },
    );
    expect(sawAbort).toBe(true);
    expect(result.ended).toBe('stopped');
    const run = await client.getRun(runId);
    expect(run.status).toBe('stopped');
    const events = await allEvents(runId);
    expect(contiguous(events)).toBe(true);
    expect(events.map((e) => e.kind)).toContain('operation_cancelled');
    expect(events.at(-1)?.kind).toBe('stopped');
  });

  it('a steer with when_busy interrupt aborts the client operation, and the client takes it at that boundary', async () => {
    const runId = await createClientDrivenRun('interrupt');
    const taken: unknown[] = [];
    const result = await drive(
      client,
      runId,
      async (session) => {
        const report = await session.operation({ kind: 'model_turn' }, async (signal) => {
          const ack = await client.steer(runId, 'look at B-9 instead', { when_busy: 'interrupt' });
          expect(ack.ack).toBe('applied');
          await new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => resolve(), { once: true }),
          );
          throw signal.reason;
        });
        expect(report).toEqual({ result: { kind: 'operation_cancelled' } });
        expect(session.run.status).toBe('running');
        taken.push(...(await session.steers()));
        await session.complete('steered');
      },
      { ttlMs: 3_000, renewEveryMs: 200 },
    );
    expect(taken).toEqual(['look at B-9 instead']);
    expect(result.run.status).toBe('completed');
    const events = await allEvents(runId);
    expect(contiguous(events)).toBe(true);
    const kinds = events.map((e) => e.kind);
    expect(kinds).toContain('steer_queued');
    expect(kinds.indexOf('operation_cancelled')).toBeGreaterThan(kinds.indexOf('steer_queued'));
    expect(kinds.indexOf('steer_consumed')).toBeGreaterThan(kinds.indexOf('operation_cancelled'));
    expect(kinds).not.toContain('steers_discarded');
  });

  it('accepts or refuses a turn outcome of each status by the three rules', async () => {
    const runId = await createClientDrivenRun('outcomes');
    const owner = 'outcomes';
    const { lease } = await client.takeLease(runId, { owner });
    const fence = { owner, epoch: lease.epoch };
    const begin = async () =>
      (await client.beginOperation(runId, { fence, kind: 'model_turn' })).operation?.op_id as string;
    const cases: [Record<string, unknown>, string | null][] = [
      [{ status: 'completed' }, 'product/ref'],
      [{ status: 'completed', 'product/ref': 'p1', 'product/digest': 'sha256:1' }, null],
      [{ status: 'refused', 'reason/code': 'policy-denied', 'product/ref': 'p' }, 'product/ref'],
      [{ status: 'refused', 'reason/code': 'policy-denied' }, null],
      [{ status: 'failed', 'reason/code': 'provider-unavailable', 'product/digest': 'd' }, 'product/digest'],
      [{ status: 'failed', 'reason/code': 'provider-unavailable', retryability: 'retryable' }, null],
      [{ status: 'cancelled', 'reason/code': 'cancelled', 'product/ref': 'p' }, 'product/ref'],
      [{ status: 'cancelled', 'reason/code': 'cancelled' }, null],
      [{ status: 'unknown', 'reason/code': 'unknown', retryability: 'terminal' }, 'retryability'],
      [{ status: 'unknown', 'reason/code': 'unknown', retryability: 'reconciliation-required' }, null],
    ];
    let opId = await begin();
    const accepted: string[] = [];
    for (const [fields, refusedField] of cases) {
      const sent = client.reportOutcome(runId, {
        fence,
        op_id: opId,
        turn_outcome: turnOutcome(runId, opId, fields),
      });
      if (refusedField === null) {
        await sent;
        accepted.push(String(fields.status));
        opId = await begin();
        continue;
      }
      const err = await refusal(sent);
      expect([err.status, err.code, err.details.reason_code]).toEqual([
        400,
        'validation_failed',
        'event-malformed',
      ]);
      expect(JSON.stringify(err.details.issues)).toContain(refusedField);
    }
    expect(accepted).toEqual(['completed', 'refused', 'failed', 'cancelled', 'unknown']);
    const run = await client.getRun(runId);
    expect(run.usage).toMatchObject({ turns: 5, input_tokens: 20, output_tokens: 10 });
    expect(contiguous(await allEvents(runId))).toBe(true);
  });

  it('shows who holds the lease, and a malformed lease request changes nothing', async () => {
    const runId = await createClientDrivenRun('lease');
    const { lease } = await client.takeLease(runId, { owner: 'viewer', ttl_ms: 60_000 });
    const view = await client.lease(runId);
    expect(view).toMatchObject({
      run_id: runId,
      client_driven: true,
      lease: { owner: 'viewer', epoch: lease.epoch },
    });
    expect(view.expires_in_ms).toBeGreaterThan(0);
    const bad = await refusal(client.takeLease(runId, { owner: '' }));
    expect([bad.status, bad.code]).toEqual([400, 'validation_failed']);
    expect((await client.lease(runId)).lease?.owner).toBe('viewer');

    const out: string[] = [];
    const code = await runCli(COMMANDS, ['--url', stack.url, '--token', stack.token, 'lease', runId], {
      out: (t) => out.push(t),
      err: (t) => out.push(t),
      cwd: process.cwd(),
      env: {},
    });
    expect(code).toBe(0);
    expect(out.join('\n')).toMatch(/lease\s+held by viewer, expires in/);
    expect(out.join('\n')).toMatch(new RegExp(`epoch\\s+${lease.epoch} \\(`));
    expect(out.join('\n').match(/epoch/g)).toHaveLength(1);
  });
});
