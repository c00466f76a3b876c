/**
 * Time travel: `GET /runs/{id}/at/{seq}` and the engine's getRunAt show a run
 * as it stood at a seq, from its log, checkpoints and stored states, with the projection the
 * pinned reducer gives again. Checked against the records the store held while the run went
 * (captured at each crash point), on a scripted conversation that compacts.
 */
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { runCli } from '../../bin/commands/program.ts';
import { EMPTY_USAGE, type RunRecord } from '../../lib/contracts/index.ts';
import { effectiveProjection } from '../../lib/core/projection.ts';
import { createHttpApp } from '../../lib/http/app.ts';
import { anyOf, bearerTokenAuth } from '../../lib/http/auth.ts';
import { alice } from '../support/hosts.ts';
import { runLongConversation } from '../support/long-conversation.ts';

const TURNS = 40;

const usageOf = (u: Record<string, unknown>) =>
  Object.fromEntries(Object.keys(EMPTY_USAGE).map((k) => [k, u[k]]));

describe('a run at a seq', () => {
  it('shows the status, usage, open requests, state and projection the run had then, across compactions', async () => {
    // The crash hook sees the record as stored at each crash point.
    const seen = new Map<number, { record: RunRecord }>();
    const c = await runLongConversation(
      TURNS,
      { compaction: { max_input_tokens: 1500 } },
      {},
      async (_p, run) => {
        // The last record at each seq.
        if (run === null) return;
        seen.set(run.last_seq, { record: structuredClone(run) });
      },
    );
    expect(c.run.status).toBe('completed');
    const compactions = c.events.filter(
      (e) => e.kind === 'checkpoint_written' && e.data.reason === 'compaction',
    );
    expect(compactions.length).toBeGreaterThan(0);
    const snapshots = [...seen.values()].filter((s) => s.record.last_seq < c.run.last_seq);
    expect(snapshots.length).toBeGreaterThan(10);
    expect(snapshots.some((s) => s.record.projection !== null)).toBe(true);
    expect(
      snapshots.some((s) => s.record.open_requests.length > 0 || s.record.unanswered_calls.length > 0),
    ).toBe(true);
    let afterCompaction = 0;
    for (const { record } of snapshots) {
      const at = await c.engine.getRunAt(record.run_id, alice, record.last_seq);
      expect(at).toMatchObject({
        seq: record.last_seq,
        last_seq: record.last_seq,
        current_seq: c.run.last_seq,
        // A lease is taken without an event: at the create's seq the run was queued until its
        // first step's commit, and reads as running (docs/guides/upgrading-a-reducer.md).
        status: record.last_seq === 1 ? 'running' : record.status,
        turn: record.turn,
        open_requests: record.open_requests,
        unanswered_calls: record.unanswered_calls,
        state_rev: record.state_rev,
        state_known: true,
        projection_known: true,
        projection: effectiveProjection(record.projection, record.status),
      });
      expect(usageOf(at.usage)).toEqual(usageOf(record.usage));
      const stored = await c.store.getState(record.run_id, record.state_rev, record.state_at);
      expect(at.state).toEqual(record.state_rev === 0 ? null : stored);
      if (at.checkpoint?.reason === 'compaction') afterCompaction += 1;
    }
    expect(afterCompaction).toBeGreaterThan(0);
  }, 120_000);

  it('answers over the HTTP API and the CLI, and 404 seq_not_found past the last seq', async () => {
    const c = await runLongConversation(6);
    const app = createHttpApp({
      engine: c.engine,
      functions: {
        get: async () => null,
        put: async () => {
          throw new Error('no');
        },
        list: async () => [],
      },
      tools: { list: async () => [] },
      auth: anyOf(bearerTokenAuth('t', alice.principal), bearerTokenAuth('bob', { kind: 'user', id: 'bob' })),
      log: () => {},
    });
    const get = (path: string, token = 't') =>
      app.request(path, { headers: { authorization: `Bearer ${token}` } });
    const firstTool = c.events.find((e) => e.kind === 'tool_result');
    if (firstTool === undefined) throw new Error('no tool result');
    const res = await get(`/runs/${c.run.run_id}/at/${firstTool.seq}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual(
      JSON.parse(JSON.stringify(await c.engine.getRunAt(c.run.run_id, alice, firstTool.seq))),
    );
    expect(body).toMatchObject({ seq: firstTool.seq, status: 'running', projection_known: true });
    const past = await get(`/runs/${c.run.run_id}/at/${c.run.last_seq + 1}`);
    expect(past.status).toBe(404);
    expect(await past.json()).toMatchObject({ code: 'seq_not_found', details: { last_seq: c.run.last_seq } });
    expect((await get(`/runs/${c.run.run_id}/at/0`)).status).toBe(400);
    expect((await get(`/runs/${c.run.run_id}/at/1`, 'bob')).status).toBe(404);

    const out: string[] = [];
    const code = await runCli(
      COMMANDS,
      [
        '--url',
        'http://api.test',
        '--token',
        't',
        'runs',
        'get',
        c.run.run_id,
        '--at',
        String(firstTool.seq),
      ],
      {
        out: (t) => out.push(t),
        err: (t) => out.push(t),
        cwd: process.cwd(),
        env: {},
        fetch: (request) => app.fetch(request),
      },
    );
    expect(code).toBe(0);
    expect(out.join('\n')).toMatch(new RegExp(`at seq +${firstTool.seq} of ${c.run.last_seq}`));
    expect(out.join('\n')).toContain('status      running');
  }, 60_000);
});
