/**
 * The CLI's argument parsing (what request each command sends) and output (human and --json),
 * over a fake API that records requests and answers from a table.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { formatEvent, formatUsd, printable, printableLines } from '../../bin/commands/format.ts';
import { formatLease } from '../../bin/commands/lease.ts';
import { runCli } from '../../bin/commands/program.ts';
import { planLines } from '../../bin/commands/watch-model.ts';
import type { LeaseView } from '../../lib/client/client-driven.ts';
import { writeLocalState } from '../../lib/client/state-file.ts';
import { EMPTY_METERED, firstUnsafeIdChar, type RunRecord } from '../../lib/contracts/index.ts';
import { DEFAULT_PRICES, withCost } from '../../lib/core/prices.ts';
import { newRun } from '../support/runs.ts';

interface Sent {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function waitingRun(): RunRecord {
  const base = newRun({ run_id: 'run_1' }, 1_700_000_000_000);
  return {
    ...base,
    status: 'waiting',
    last_seq: 4,
    usage: { ...base.usage, turns: 1, operations: 2, tool_calls: 1, input_tokens: 10, output_tokens: 5 },
    open_requests: [
      {
        kind: 'approval',
        request_id: 'run_1/req/1',
        effect_id: '2:0',
        subject: { kind: 'plan', digest: 'd'.repeat(64), digest_alg: 'sha256', summary: 'deploy v2' },
        opened_at: 1_700_000_000_500,
        expires_at: null,
      },
    ],
    projection: { items: [{ key: 'a', title: 'Draft the plan', status: 'waiting' }], summary: 'planning' },
  } as RunRecord;
}

/** Runs the CLI against a fake API: `answer(sent)` returns [status, body]. */
async function cli(
  args: string[],
  answer: (sent: Sent) => [number, unknown] = () => [200, { ack: 'applied', seq: 5 }],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; url?: boolean; tty?: NodeJS.WritableStream } = {},
) {
  const sent: Sent[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(
    COMMANDS,
    [...(options.url === false ? [] : ['--url', 'http://api.test']), ...args],
    {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      tty: options.tty,
      cwd: options.cwd ?? '/nonexistent',
      env: options.env ?? {},
      fetch: async (request) => {
        const url = new URL(request.url);
        const text = await request.text();
        const s: Sent = {
          method: request.method,
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          headers: Object.fromEntries(request.headers),
          body: text === '' ? undefined : JSON.parse(text),
        };
        sent.push(s);
        const [status, body] = answer(s);
        return new Response(JSON.stringify(body), {
          status,
          headers: { 'content-type': 'application/json' },
        });
      },
    },
  );
  return { code, sent, out: out.join('\n'), err: err.join('\n') };
}

describe('agent-runs runs', () => {
  it('runs create sends the subject, reducer, parsed input and options, and prints the capability once', async () => {
    const run = newRun({ run_id: 'run_9' });
    const r = await cli(
      [
        'runs',
        'create',
        '--workspace',
        'ai',
        '--path',
        '/chats/1',
        '--reducer',
        '/agents/x',
        '--input',
        '{"text":"hi"}',
        '--budgets',
        '{"max_turns":3}',
        '--on-exceeded',
        'fail',
        '--create-key',
        'k1',
      ],
      () => [201, { run, created: true, control_capability: 'cap-secret' }],
    );
    expect(r.code).toBe(0);
    expect(r.sent).toEqual([
      expect.objectContaining({
        method: 'POST',
        path: '/runs',
        body: {
          subject: { workspace: 'ai', path: '/chats/1' },
          reducer: { function_path: '/agents/x' },
          input: { text: 'hi' },
          budgets: { max_turns: 3 },
          on_exceeded: 'fail',
          create_key: 'k1',
        },
      }),
    ]);
    expect(r.out).toBe('created run_9 (queued)\ncontrol capability (shown once): cap-secret');
  });

  it('runs create takes a plain-string input and says when the subject already had a live run', async () => {
    const run = newRun({ run_id: 'run_live' });
    const r = await cli(
      ['runs', 'create', '--workspace', 'ai', '--path', '/c', '--input', 'hello there'],
      () => [200, { run, created: false }],
    );
    expect(r.sent[0]?.body).toEqual({ subject: { workspace: 'ai', path: '/c' }, input: 'hello there' });
    expect(r.out).toMatch(/^existing run run_live \(queued\)/);
  });

  it('runs create refuses a half subject before sending anything', async () => {
    const r = await cli(['runs', 'create', '--workspace', 'ai']);
    expect(r).toMatchObject({ code: 1, sent: [] });
    expect(r.err).toBe('error: --workspace and --path go together');
  });

  it('runs get prints status, subject, usage, the plan and how to answer an open approval', async () => {
    const r = await cli(['runs', 'get', 'run_1'], () => [200, waitingRun()]);
    expect(r.sent[0]).toMatchObject({ method: 'GET', path: '/runs/run_1' });
    expect(r.out).toMatch(/^run\s+run_1$/m);
    expect(r.out).toMatch(/^status\s+waiting$/m);
    expect(r.out).toMatch(/^subject\s+ai:\/chats\/c1$/m);
    expect(r.out).toContain('turns 1 · operations 2 · model calls 0 · tool calls 1 · tokens 10 in / 5 out');
    expect(r.out).toContain(`agent-runs approve run_1 run_1/req/1 --digest ${'d'.repeat(64)}`);
    expect(r.out).toContain('plan: planning\n  [waiting] Draft the plan');
  });

  it('runs get explains a stalled lease with the deployment timings of GET /config, else the defaults', async () => {
    // A lease renewed long ago (expires in 5 s of a 60 s lease): its holder stopped renewing it.
    const stalled = {
      ...newRun({ run_id: 'run_1' }, Date.now() - 120_000),
      status: 'running',
      lease: { owner: 'worker-7', expires_at: Date.now() + 5_000 },
      operation: null,
      open_requests: [],
    } as unknown as RunRecord;
    const timings = {
      lease_ttl_ms: 60_000,
      heartbeat_ms: 10_000,
      clock_skew_ms: 20_000,
      sweep_interval_ms: 15_000,
      stop_poll_ms: 2_000,
    };
    // `7 s`, `2 min 10 s`, `3 min` in seconds.
    const secs = (d: string) => {
      const m = /^(?:(\d+) min)? ?(?:(\d+) s)?$/.exec(d);
      return m === null ? Number.NaN : Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
    };
    const window = (out: string) => {
      const m = /takes the run over in (.+?) to (.+?)(?:,|\n|$)/m.exec(out);
      return m === null ? null : secs(m[2] ?? '') - secs(m[1] ?? '');
    };

    const told = await cli(['runs', 'get', 'run_1'], (sent) =>
      sent.path === '/config' ? [200, { timings }] : [200, stalled],
    );
    const older = await cli(['runs', 'get', 'run_1'], (sent) =>
      sent.path === '/config'
        ? [404, { code: 'not_found', message: 'no route', details: {} }]
        : [200, stalled],
    );
    const notRunning = await cli(['runs', 'get', 'run_1'], () => [200, waitingRun()]);

    expect(told.sent.map((s) => s.path)).toEqual(['/runs/run_1', '/config']);
    expect(window(told.out)).toBe(15); // one sweeper period of this deployment
    expect(window(older.out)).toBe(60); // the default period
    expect(notRunning.sent.map((s) => s.path)).toEqual(['/runs/run_1']);
  });

  it('runs get writes its hints the way the CLI was run: npx, npm run agent-runs --, or installed', async () => {
    const digest = 'd'.repeat(64);
    const hint = async (env: NodeJS.ProcessEnv) =>
      (await cli(['runs', 'get', 'run_1'], () => [200, waitingRun()], { env })).out
        .split('\n')
        .find((line) => line.includes(`approve run_1 run_1/req/1 --digest ${digest}`))
        ?.trim();
    expect(await hint({ npm_command: 'exec', npm_lifecycle_event: 'npx' })).toBe(
      `$ npx agent-runs approve run_1 run_1/req/1 --digest ${digest}`,
    );
    expect(await hint({ npm_command: 'run', npm_lifecycle_event: 'agent-runs' })).toBe(
      `$ npm run agent-runs -- approve run_1 run_1/req/1 --digest ${digest}`,
    );
    expect(await hint({})).toBe(`$ agent-runs approve run_1 run_1/req/1 --digest ${digest}`);
  });

  it('runs get explains a child waited for by two requests once, with one read of the child', async () => {
    const parent = newRun({ run_id: 'run_p' }, 1_700_000_000_000);
    const childWait = (n: number) => ({
      kind: 'result',
      request_id: `run_p/req/${n}`,
      effect_id: `${n}:0`,
      resume_key: 'child:run_c',
      op_id: `run_p/op/${n}`,
      tool: '/lib/raisin/agent-runs/delegate',
      opened_at: 1_700_000_000_000,
      expires_at: null,
    });
    const waitingParent = {
      ...parent,
      status: 'waiting',
      lease: null,
      operation: null,
      open_requests: [childWait(1), childWait(2)],
    } as unknown as RunRecord;
    // The child's worker crashed: its lease was last renewed long ago.
    const child = {
      ...newRun({ run_id: 'run_c' }, 1_700_000_000_000),
      status: 'running',
      lease: { owner: 'worker-9', expires_at: Date.now() - 5_000 },
      operation: null,
    } as unknown as RunRecord;
    const r = await cli(['runs', 'get', 'run_p'], (sent) => [
      200,
      sent.path === '/runs/run_c' ? child : waitingParent,
    ]);
    expect(r.sent.map((s) => s.path)).toEqual(['/runs/run_p', '/runs/run_c']);
    const count = (text: string) => r.out.split(text).length - 1;
    expect(count('waiting for child run run_c to end')).toBe(1);
    expect(count('lease held by worker worker-9')).toBe(1);
    expect(count('the child run:')).toBe(1);
  });

  it('runs get prints the run cost: total, model and AWS parts, and the date of the prices', async () => {
    const run = withCost(
      {
        ...waitingRun(),
        executor_config: { model_turn_function: '/lib/models/recorded' },
        metered: { ...EMPTY_METERED, dynamodb_write_units: 400, lambda_invocations: 3, lambda_gb_seconds: 2 },
      } as RunRecord,
      DEFAULT_PRICES,
    );
    const r = await cli(['runs', 'get', 'run_1'], () => [200, run]);
    expect(r.out).toMatch(
      /^cost\s+\$0\.000\d+ \(model gpt-4o \$0\.000075\d* · AWS \$0\.000\d+: DynamoDB \$0\.000250/m,
    );
    expect(r.out).toContain(`us-east-1 prices of ${DEFAULT_PRICES.as_of}`);
    expect(r.out).not.toMatch(/\de-\d/);
    expect([formatUsd(4e-7), formatUsd(0.00025), formatUsd(0), formatUsd(1.254)]).toEqual([
      '$0.000000400',
      '$0.000250',
      '$0.00',
      '$1.25',
    ]);
  });

  it('--json prints the API response as JSON', async () => {
    const run = waitingRun();
    const r = await cli(['--json', 'runs', 'get', 'run_1'], () => [200, run]);
    expect(JSON.parse(r.out)).toEqual(JSON.parse(JSON.stringify(run)));
  });

  it('runs list without a filter asks every live status and merges them newest first', async () => {
    const older = { ...newRun({ run_id: 'run_old' }, 1_000) };
    const newer = { ...waitingRun(), run_id: 'run_new', created_at: 2_000 } as RunRecord;
    const r = await cli(['runs', 'list'], (s) => [
      200,
      { runs: s.query.status === 'queued' ? [older] : s.query.status === 'waiting' ? [newer] : [] },
    ]);
    expect(r.sent.map((s) => s.query.status).sort()).toEqual([
      'cancelling',
      'paused',
      'queued',
      'running',
      'waiting',
    ]);
    const rows = r.out.split('\n');
    expect(rows[0]).toMatch(/^RUN\s+STATUS\s+SUBJECT\s+CREATED\s+NEEDS YOU$/);
    expect(rows.slice(1, 3).map((l) => l.split(/\s+/)[0])).toEqual(['run_new', 'run_old']);
    // NEEDS YOU says what a run waits on a person for, and is empty for one that needs nobody.
    expect(rows[1]).toMatch(/\s1 approval to decide$/);
    expect(rows[2]).toMatch(/Z$/);
    expect(rows[3]).toMatch(/^NEEDS YOU: /);
    expect(rows[4]).toBe(
      'ended runs (completed, failed, stopped) are not listed: add --status completed (or failed, stopped)',
    );
  });

  it('runs list --status pages with a cursor and prints the next one', async () => {
    const r = await cli(['runs', 'list', '--status', 'waiting', '--limit', '5', '--cursor', 'c0'], () => [
      200,
      { runs: [waitingRun()], cursor: 'c1' },
    ]);
    expect(r.sent[0]?.query).toEqual({ status: 'waiting', limit: '5', cursor: 'c0' });
    expect(r.out).toContain('next page: --status waiting --cursor c1');
  });
});

describe('control characters in human output', () => {
  /** Any C0 or C1 control or DEL but the newline. */
  const CONTROL_BUT_NEWLINE = /(?!\n)\p{Cc}/u;

  it('printable escapes every C0 and C1 control and DEL as \\uXXXX, and keeps other text', () => {
    expect(printable('a\u001b[2Jb')).toBe('a\\u001b[2Jb');
    expect(printable('x\r\ny\tz\u0000')).toBe('x\\u000d\\u000ay\\u0009z\\u0000');
    expect(printable('\u007f\u0080\u009b\u009f')).toBe('\\u007f\\u0080\\u009b\\u009f');
    // Bidirectional formatting characters: a path cannot display as another.
    expect(printable('/x\u202egnp.exe\u2066')).toBe('/x\\u202egnp.exe\\u2066');
    // Every character the API refuses in an identifier beside the controls (clean-text.ts).
    for (const c of [
      0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068,
      0x2069,
    ]) {
      expect(printable(`a${String.fromCharCode(c)}b`), `U+${c.toString(16)}`).toBe(
        `a\\u${c.toString(16).padStart(4, '0')}b`,
      );
      expect(firstUnsafeIdChar(`a${String.fromCharCode(c)}b`), `U+${c.toString(16)}`).toMatchObject({
        index: 1,
      });
    }
    expect(firstUnsafeIdChar('ä 😀 plain')).toBeNull();
    // A no-break space reads as a space: an identifier refuses it (printed prose keeps it).
    expect(firstUnsafeIdChar('ä\u00a0plain')).toMatchObject({ index: 1, reads_as: ' ' });
    // Identifiers refuse every invisible format character; printed prose keeps the zero-width
    // joiners and non-joiners its scripts and emoji use.
    expect(firstUnsafeIdChar('plain\u200b')).toMatchObject({ index: 5 });
    expect(printable('می\u200cخواهم 👩\u200d💻')).toBe('می\u200cخواهم 👩\u200d💻');
    expect(printable('ä 😀 \u00a0 plain')).toBe('ä 😀 \u00a0 plain');
    for (let c = 0; c <= 0xa0; c += 1) {
      const out = printable(String.fromCharCode(c));
      const control = c <= 0x1f || (c >= 0x7f && c <= 0x9f);
      expect(out, `U+${c.toString(16)}`).toBe(
        control ? `\\u${c.toString(16).padStart(4, '0')}` : String.fromCharCode(c),
      );
    }
    expect(printableLines('one\u001b\ntwo\r')).toBe('one\\u001b\ntwo\\u000d');
  });

  it('runs get escapes what the run stores (subject, objective, plan, request) so no line is forged; --json keeps it', async () => {
    const base = waitingRun();
    const run = {
      ...base,
      subject: { workspace: 'ai\u001b]0;owned\u0007', path: '/x\u001b[2J' },
      objective: 'fine\r\nstatus    completed',
      projection: { items: [{ key: 'a', title: 'step\u009b1m', status: 'waiting' }], summary: 'p\u0000' },
      open_requests: [
        {
          kind: 'approval',
          request_id: 'run_1/req/1',
          effect_id: '2:0',
          subject: { kind: 'plan', digest: 'd', digest_alg: 'sha256', summary: 'ok\u001b[1A\u007f' },
          opened_at: 0,
          expires_at: null,
        },
      ],
    } as RunRecord;
    const r = await cli(['runs', 'get', 'run_1'], () => [200, run]);
    expect(r.code).toBe(0);
    expect(r.out).not.toMatch(CONTROL_BUT_NEWLINE);
    expect(r.out).toContain('ai\\u001b]0;owned\\u0007:/x\\u001b[2J');
    // A newline in the objective continues it on the next row, under an empty key.
    expect(r.out).toContain('objective  fine\n           status    completed');
    expect(r.out.split('\n').filter((l) => l.startsWith('status'))).toEqual(['status     waiting']);
    expect(r.out).toContain('step\\u009b1m');
    expect(r.out).toContain('ok\\u001b[1A\\u007f');
    const json = await cli(['--json', 'runs', 'get', 'run_1'], () => [200, run]);
    expect((JSON.parse(json.out) as RunRecord).subject).toEqual(run.subject);
  });

  it('runs list, an event line and an API error message are escaped too', async () => {
    const run = {
      ...newRun({ run_id: 'run_2' }),
      subject: { workspace: 'w', path: '/p\u001b[K' },
    } as RunRecord;
    const list = await cli(['runs', 'list', '--status', 'running'], () => [200, { runs: [run] }]);
    expect(list.out).toContain('w:/p\\u001b[K');
    expect(list.out).not.toMatch(CONTROL_BUT_NEWLINE);
    // JSON.stringify leaves DEL and C1 controls as they are; the event line does not.
    const line = formatEvent({ seq: 3, at: 0, kind: 'steered', data: { input: 'a\u009b2J\u007f' } } as never);
    expect(line).toContain('a\\u009b2J\\u007f');
    expect(line).not.toMatch(CONTROL_BUT_NEWLINE);
    const plan = planLines({
      ...run,
      projection: { items: [{ key: 'k', title: 't\n[done] x', status: 'pending' }] },
    });
    expect(plan).toEqual(['plan', '  [pending] t\\u000a[done] x']);
    const error = await cli(['runs', 'get', 'run_1'], () => [
      400,
      {
        code: 'validation_failed',
        message: 'bad \u001b[2J',
        details: { issues: [{ path: 'a\u001b', message: 'm\r' }] },
      },
    ]);
    expect(error.code).toBe(1);
    expect(error.err).toContain('bad \\u001b[2J');
    expect(error.err).toContain('a\\u001b: m\\u000d');
    expect(error.err).not.toMatch(CONTROL_BUT_NEWLINE);
  });
});

describe('structured options that open like JSON', () => {
  it('refuses a --context with a typo in its JSON, sending nothing, and takes a plain string', async () => {
    const bad = await cli([
      'runs',
      'create',
      '--workspace',
      'w',
      '--path',
      '/p',
      '--context',
      '{"mode":"task",',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('--context must be JSON');
    expect(bad.sent).toEqual([]);
    const run = newRun({ run_id: 'run_c' });
    const plain = await cli(
      ['runs', 'create', '--workspace', 'w', '--path', '/p', '--context', 'be brief'],
      () => [201, { run, created: true }],
    );
    expect(plain.sent[0]?.body).toMatchObject({ context: 'be brief' });
    // --input stays lenient: natural text may open with a bracket.
    const input = await cli(
      ['runs', 'create', '--workspace', 'w', '--path', '/p', '--input', '[draft] fix it'],
      () => [201, { run, created: true }],
    );
    expect(input.sent[0]?.body).toMatchObject({ input: '[draft] fix it' });
  });
});

describe('@file for every JSON option', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-at-file-'));
  const file = (name: string, value: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(value));
    return `@${path}`;
  };

  it('reads --input, --context, --budgets, --executor-config and --body from files', async () => {
    const run = newRun({ run_id: 'run_f' });
    const r = await cli(
      [
        'runs',
        'create',
        '--body',
        file('body.json', { subject: { workspace: 'ai', path: '/from-body' }, objective: 'o' }),
        '--input',
        file('input.json', { text: 'from a file' }),
        '--context',
        file('context.json', { tools: [], mode: 'task' }),
        '--budgets',
        file('budgets.json', { max_turns: 4 }),
        '--executor-config',
        file('executor.json', { model_turn_function: '/lib/models/openai' }),
      ],
      () => [201, { run, created: true }],
    );
    expect(r.code).toBe(0);
    expect(r.sent[0]?.body).toEqual({
      subject: { workspace: 'ai', path: '/from-body' },
      objective: 'o',
      input: { text: 'from a file' },
      context: { tools: [], mode: 'task' },
      budgets: { max_turns: 4 },
      executor_config: { model_turn_function: '/lib/models/openai' },
    });
  });

  it('reads steer input, answer value, deliver result and --budget-increase from files', async () => {
    const steer = await cli(['steer', 'run_1', file('steer.json', { note: 'faster' })]);
    const answer = await cli(['answer', 'run_1', 'run_1/req/2', file('answer.json', ['yes'])]);
    const deliver = await cli(['deliver', 'callback:op1', file('result.json', { ok: true })], () => [
      200,
      { run_id: 'run_1', seq: 9 },
    ]);
    const resume = await cli([
      'resume',
      'run_1',
      '--budget-increase',
      file('more.json', { max_operations: 5 }),
    ]);
    expect(steer.sent[0]?.body).toMatchObject({ command: 'steer', input: { note: 'faster' } });
    expect(answer.sent[0]?.body).toMatchObject({ command: 'provide_input', value: ['yes'] });
    expect(deliver.sent[0]?.body).toEqual({ ok: true });
    expect(resume.sent[0]?.body).toMatchObject({ command: 'resume', budget_increase: { max_operations: 5 } });
  });

  it('refuses a missing or non-JSON file, naming the option, and sends nothing', async () => {
    const missing = await cli([
      'runs',
      'create',
      '--workspace',
      'a',
      '--path',
      '/p',
      '--budgets',
      '@/no/such.json',
    ]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('--budgets: cannot read /no/such.json');
    writeFileSync(join(dir, 'bad.json'), 'not json');
    const bad = await cli(['steer', 'run_1', `@${join(dir, 'bad.json')}`]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('is not JSON');
    expect([...missing.sent, ...bad.sent]).toEqual([]);
  });
});

describe('agent-runs controls', () => {
  it('approve quotes a whole digest as given, generates a control id, and prints the ack', async () => {
    const r = await cli(['approve', 'run_1', 'run_1/req/1', '--digest', 'd'.repeat(64)]);
    expect(r.sent).toHaveLength(1);
    expect(r.sent[0]).toMatchObject({ method: 'POST', path: '/runs/run_1/controls' });
    expect(r.sent[0]?.body).toEqual({
      command: 'approve',
      request_id: 'run_1/req/1',
      subject_digest: 'd'.repeat(64),
      decision: 'approved',
      control_id: expect.stringMatching(UUID),
    });
    expect(r).toMatchObject({ code: 0, out: 'applied (seq 5)' });
  });

  it('approve needs --digest, and --reject sends a rejection', async () => {
    const missing = await cli(['approve', 'run_1', 'req']);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("required option '--digest <digest>' not specified");
    const rejected = await cli([
      'approve',
      'run_1',
      'run_1/req/1',
      '--digest',
      'd'.repeat(64),
      '--reject',
      '--reason',
      'no',
    ]);
    expect(rejected.sent[0]?.body).toMatchObject({ decision: 'rejected', reason: 'no' });
    // The whole digest as the console's "show full" writes it goes out as the API's bare hex.
    const prefixed = await cli([
      'approve',
      'run_1',
      'run_1/req/1',
      '--digest',
      `sha256:rfc8785:${'d'.repeat(64)}`,
    ]);
    expect(prefixed.sent[0]?.body).toMatchObject({ subject_digest: 'd'.repeat(64) });
  });

  it("approve expands req/N and the short digest `events` prints to the open request's id and digest", async () => {
    const digest = `322c09e8d649${'a'.repeat(52)}`;
    const run = waitingRun();
    const approval = {
      ...run.open_requests[0],
      subject: { kind: 'plan', digest, digest_alg: 'sha256', summary: 's' },
    };
    const withDigest = { ...run, open_requests: [approval] } as RunRecord;
    for (const given of ['322c09e8d649', '322c09e8d649…', `sha256:rfc8785:322c09e8d649aaaa`]) {
      for (const reject of [[], ['--reject']]) {
        const r = await cli(['approve', 'run_1', 'req/1', '--digest', given, ...reject], (sent) =>
          sent.method === 'GET' ? [200, withDigest] : [200, { ack: 'applied', seq: 5 }],
        );
        expect(r.sent.map((s) => `${s.method} ${s.path}`)).toEqual([
          'GET /runs/run_1',
          'POST /runs/run_1/controls',
        ]);
        expect(r.sent[1]?.body).toMatchObject({
          command: 'approve',
          request_id: 'run_1/req/1',
          subject_digest: digest,
          decision: reject.length > 0 ? 'rejected' : 'approved',
        });
        expect(r.code).toBe(0);
      }
    }
  });

  it("approve with a digest that is not the request's sends nothing and says how its digest begins", async () => {
    const digest = `322c09e8d649${'a'.repeat(52)}`;
    const run = waitingRun();
    const approval = {
      ...run.open_requests[0],
      subject: { kind: 'plan', digest, digest_alg: 'sha256', summary: 's' },
    };
    const withDigest = { ...run, open_requests: [approval] } as RunRecord;
    const answer = (): [number, unknown] => [200, withDigest];
    const wrong = await cli(['approve', 'run_1', 'run_1/req/1', '--digest', '0123456789ab'], answer);
    expect(wrong.sent.map((s) => s.method)).toEqual(['GET']);
    expect(wrong.code).toBe(1);
    expect(wrong.err).toBe(
      'error: the digest 0123456789ab does not match request run_1/req/1 (its digest begins 322c09e8d649); ' +
        'use the full digest from `agent-runs runs get run_1`',
    );
    const short = await cli(['approve', 'run_1', 'req/1', '--digest', '322c09'], answer);
    expect(short.sent.map((s) => s.method)).toEqual(['GET']);
    expect(short.err).toContain('a prefix needs at least 12 hex characters');
    const closed = await cli(['approve', 'run_1', 'req/2', '--digest', '322c09e8d649'], answer);
    expect(closed.sent.map((s) => s.method)).toEqual(['GET']);
    expect(closed.err).toBe(
      'error: request run_1/req/2 is not open on run run_1 (open: run_1/req/1); ' +
        '`agent-runs runs get run_1` shows what the run waits for',
    );
  });

  it("approve and answer refuse a request id that is not the run's, sending nothing", async () => {
    for (const args of [
      ['approve', 'run_1', 'run_2/req/1', '--digest', 'd'.repeat(64)],
      ['approve', 'run_1', '1', '--digest', 'd'.repeat(64)],
      ['answer', 'run_1', 'req_2', 'yes'],
    ]) {
      const r = await cli(args);
      expect(r).toMatchObject({ code: 1, sent: [] });
      expect(r.err).toMatch(/is not a request of run run_1: request ids read run_1\/req\/N \(or req\/N\)/);
    }
  });

  it('resume sends budget_increase and accept_reducer_change; a bad JSON option sends nothing', async () => {
    const r = await cli([
      'resume',
      'run_1',
      '--budget-increase',
      '{"max_operations":5}',
      '--accept-reducer-change',
    ]);
    expect(r.sent[0]?.body).toMatchObject({
      command: 'resume',
      budget_increase: { max_operations: 5 },
      accept_reducer_change: true,
    });
    const bad = await cli(['resume', 'run_1', '--budget-increase', 'more']);
    expect(bad).toMatchObject({ code: 1, sent: [] });
    expect(bad.err).toBe('error: --budget-increase must be JSON (or @file): more');
  });

  it('steer, answer, stop and pause send their command with the given control id and capability', async () => {
    const steer = await cli(['steer', 'run_1', 'look again', '--control-id', 'c-1', '--capability', 'cap']);
    expect(steer.sent[0]?.body).toEqual({ command: 'steer', input: 'look again', control_id: 'c-1' });
    expect(steer.sent[0]?.headers['x-control-capability']).toBe('cap');
    const answer = await cli(['answer', 'run_1', 'req/2', '{"flight":"HAT001"}']);
    expect(answer.sent[0]?.body).toMatchObject({
      command: 'provide_input',
      request_id: 'run_1/req/2',
      value: { flight: 'HAT001' },
    });
    const stop = await cli(['stop', 'run_1', '--reason', 'done']);
    expect(stop.sent[0]?.body).toMatchObject({ command: 'stop', reason: 'done' });
    const pause = await cli(['pause', 'run_1']);
    expect(pause.sent[0]?.body).toEqual({ command: 'pause', control_id: expect.stringMatching(UUID) });
  });

  it('steer --when-busy sends what to do while an operation is in flight, and refuses another value', async () => {
    const steer = await cli([
      'steer',
      'run_1',
      'stop that',
      '--when-busy',
      'interrupt',
      '--control-id',
      'c-2',
    ]);
    expect(steer.sent[0]?.body).toEqual({
      command: 'steer',
      input: 'stop that',
      when_busy: 'interrupt',
      control_id: 'c-2',
    });
    const bad = await cli(['steer', 'run_1', 'x', '--when-busy', 'later']);
    expect(bad).toMatchObject({ code: 1, sent: [] });
    expect(bad.err).toBe('error: --when-busy must be enqueue, reject or interrupt');
  });

  it('prints duplicate and rejected acks; a rejected one exits 2', async () => {
    const dup = await cli(['stop', 'run_1'], () => [200, { ack: 'duplicate', original_seq: 7 }]);
    expect(dup).toMatchObject({ code: 0, out: 'duplicate (original seq 7)' });
    const rej = await cli(['stop', 'run_1'], () => [
      200,
      { ack: 'rejected', reason: 'run_terminal', seq: 9 },
    ]);
    expect(rej).toMatchObject({ code: 2, out: 'rejected: run_terminal (seq 9)' });
  });

  it('deliver posts the JSON result to the resume key', async () => {
    const r = await cli(['deliver', 'rk-1', '{"status":"done"}'], () => [
      200,
      { ack: 'applied', run_id: 'run_1', seq: 12 },
    ]);
    expect(r.sent[0]).toMatchObject({ method: 'POST', path: '/results/rk-1', body: { status: 'done' } });
    expect(r.out).toBe('delivered to run_1 (seq 12)');
    const bad = await cli(['deliver', 'rk-1', 'not json']);
    expect(bad).toMatchObject({ code: 1, sent: [] });
  });
});

/** A control character other than the newline between lines (events output). */
const CONTROL_BUT_NEWLINE_IN_EVENTS = /(?!\n)\p{Cc}/u;

describe('agent-runs events and tools', () => {
  it('events prints one line per event and where the next page starts', async () => {
    const page = {
      events: [
        { seq: 1, kind: 'run_started', at: Date.UTC(2026, 0, 1, 12, 0, 0, 5), data: {} },
        {
          seq: 2,
          kind: 'request_opened',
          at: Date.UTC(2026, 0, 1, 12, 0, 1),
          data: { kind: 'input', request_id: 'r/req/1', question: 'which flight?' },
        },
      ],
      next_after: 2,
      last_seq: 5,
      status: 'waiting',
      settled: false,
    };
    const r = await cli(['events', 'run_1', '--limit', '2'], () => [200, page]);
    expect(r.sent[0]?.query).toEqual({ after: '0', limit: '2' });
    expect(r.out.split('\n')).toEqual([
      '#   1  12:00:00.005  run_started',
      '#   2  12:00:01.000  request_opened          question r/req/1: "which flight?"',
      'more: --after 2 (the last event is #5; the run is waiting)',
    ]);
  });

  it('events indents the lines of a multi-line text and prints digests short, in full with --full-digests', async () => {
    const digest = `${'ab12cd34ef56'}${'0'.repeat(52)}`;
    const page = {
      events: [
        {
          seq: 4,
          kind: 'steer_queued',
          at: Date.UTC(2026, 0, 1, 12, 0, 0),
          data: { input: 'first line\nsecond\u001b[2J line\r\n#   9  forged' },
        },
        {
          seq: 5,
          kind: 'request_opened',
          at: Date.UTC(2026, 0, 1, 12, 0, 1),
          data: {
            kind: 'approval',
            request_id: 'r/req/1',
            subject: { kind: 'tool_call', digest: `sha256:rfc8785:${digest}`, summary: 'Call charge' },
          },
        },
      ],
      next_after: 5,
      last_seq: 5,
      status: 'waiting',
      settled: false,
    };
    const r = await cli(['events', 'run_1'], () => [200, page]);
    const pad = ' '.repeat('#   4  12:00:00.000  steer_queued            '.length);
    expect(r.out.split('\n')).toEqual([
      '#   4  12:00:00.000  steer_queued            first line',
      `${pad}second\\u001b[2J line`,
      `${pad}#   9  forged`,
      '#   5  12:00:01.000  request_opened          approval r/req/1 digest ab12cd34ef56… "Call charge"',
      '(the last event is #5; the run is waiting)',
    ]);
    expect(r.out).not.toMatch(CONTROL_BUT_NEWLINE_IN_EVENTS);
    const full = await cli(['events', 'run_1', '--full-digests'], () => [200, page]);
    expect(full.out).toContain(`digest sha256:rfc8785:${digest} "Call charge"`);
    const json = await cli(['--json', 'events', 'run_1'], () => [200, page]);
    expect(json.out).toContain(`sha256:rfc8785:${digest}`);
  });

  it('an event line says the registry versions a run pinned in words', () => {
    const line = formatEvent({
      seq: 1,
      kind: 'run_started',
      at: Date.UTC(2026, 0, 1),
      data: { pinned: { catalogue: 0, policy: 1, agents: 0 } },
    } as never);
    expect(line).toBe(
      '#   1  00:00:00.000  run_started             registry versions pinned: tools 0, policy 1, agents 0 (its tool calls use these, whatever is published later)',
    );
  });

  /** A fake API for `events --follow`: two pages, the run completing on the second. */
  function followApi(s: Sent): [number, unknown] {
    const ev = (seq: number, kind: string) => ({ seq, kind, at: Date.UTC(2026, 0, 1), data: {} });
    const run = newRun({ run_id: 'run_1' });
    if (s.path === '/runs/run_1') {
      const done = s.query.after === undefined && sentCount++ > 0;
      return [
        200,
        done
          ? {
              ...run,
              status: 'completed',
              lease: null,
              operation: null,
              open_requests: [],
              queued_steers: [],
              terminal_reason: 'completed',
              finished_at: 1,
              owed: [],
              outcome: 'succeeded',
              last_seq: 3,
              usage: { ...run.usage, operations: 1 },
            }
          : { ...run, last_seq: 2 },
      ];
    }
    if (s.query.after === '0') {
      return [
        200,
        {
          events: [ev(1, 'run_started'), ev(2, 'operation_started')],
          next_after: 2,
          last_seq: 2,
          status: 'running',
          settled: false,
        },
      ];
    }
    return [
      200,
      { events: [ev(3, 'run_completed')], next_after: 3, last_seq: 3, status: 'completed', settled: true },
    ];
  }
  let sentCount = 0;

  it('events --follow prints events as they arrive until the run ends, and long-polls', async () => {
    sentCount = 0;
    const r = await cli(['events', 'run_1', '--follow'], followApi);
    expect(r.code).toBe(0);
    expect(r.out.split('\n')).toEqual([
      '#   1  00:00:00.000  run_started',
      '#   2  00:00:00.000  operation_started',
      '#   3  00:00:00.000  run_completed',
      'run run_1 completed (succeeded)',
    ]);
    const polls = r.sent.filter((x) => x.path.endsWith('/events'));
    expect(polls.map((x) => x.query)).toEqual([
      { after: '0', limit: '100', wait: '20' },
      { after: '2', limit: '100', wait: '20' },
    ]);
  });

  it('events --follow --until KIND stops after the first event of that kind, without polling on', async () => {
    sentCount = 0;
    const r = await cli(['events', 'run_1', '--follow', '--until', 'operation_started'], followApi);
    expect(r.code).toBe(0);
    expect(r.out.split('\n').slice(0, 2)).toEqual([
      '#   1  00:00:00.000  run_started',
      '#   2  00:00:00.000  operation_started',
    ]);
    expect(r.out).not.toContain('run_completed');
    expect(r.sent.filter((x) => x.path.endsWith('/events'))).toHaveLength(1);
  });

  it('events --follow --until refuses a word that is no event kind', async () => {
    const r = await cli(['events', 'run_1', '--follow', '--until', 'approved'], followApi);
    expect(r.code).toBe(1);
    expect(r.err).toContain('--until must be an event kind');
    expect(r.sent).toEqual([]);
  });

  it('events --follow --json prints one JSON event per line', async () => {
    sentCount = 0;
    const r = await cli(['--json', 'events', 'run_1', '--follow'], followApi);
    expect(r.out.split('\n').map((l) => JSON.parse(l).seq)).toEqual([1, 2, 3]);
  });

  it('events --follow on a terminal draws a live status line under the events', async () => {
    sentCount = 0;
    const chunks: string[] = [];
    const tty = Object.assign(new PassThrough(), { isTTY: true, columns: 120 });
    tty.on('data', (c: Buffer) => chunks.push(c.toString()));
    const r = await cli(['events', 'run_1', '--follow'], followApi, { tty });
    expect(r.code).toBe(0);
    const drawn = chunks.join('');
    expect(drawn).toContain('#   3  00:00:00.000  run_completed');
    expect(drawn).toMatch(
      /completed \| operations 1 \| turns 0 \| model calls 0 \| tool calls 0 \| tokens 0 \| events 3/,
    );
    expect(r.out).toBe('run run_1 completed (succeeded)');
  });

  const lookupTool = (approval: string) => ({
    name: 'lookup',
    version: '1.2.0',
    description: 'finds things',
    input_schema: {},
    metadata: {
      mutating: false,
      replay_safe: true,
      risk: 'low',
      timeout_ms: 1000,
      max_output_bytes: 10,
      approval,
    },
  });
  const listing = (kind: string, entries: { name: string; version: string; body: unknown }[], v: number) => ({
    kind,
    registry_version: v,
    entries: entries.map((e) => ({
      ...e,
      kind,
      digest: 'a'.repeat(64),
      published_at: 1,
      published_by: { kind: 'user', id: 'root' },
      registry_version: v,
    })),
  });

  it('tools prints a table of metadata, and says the policy is unknown when it cannot be read', async () => {
    const r = await cli(['tools'], (s) =>
      s.path === '/v1/tools'
        ? [200, { tools: [lookupTool('never')] }]
        : [403, { code: 'unauthorized', message: 'admin only', details: {} }],
    );
    expect(r.code).toBe(0);
    expect(r.out.split('\n')[0]).toMatch(
      /^NAME\s+VERSION\s+RISK\s+MUTATING\s+TOOL APPROVAL\s+POLICY\s+DESCRIPTION$/,
    );
    expect(r.out.split('\n')[1]).toMatch(/^lookup\s+1\.2\.0\s+low\s+no\s+never\s+\?\s+finds things$/);
    expect(r.out).toContain('the policy could not be read (unauthorized');
  });

  it('tools list is the same as tools, and another word is refused without a request', async () => {
    const api = (s: Sent): [number, unknown] =>
      s.path === '/v1/tools'
        ? [200, { tools: [lookupTool('never')] }]
        : [403, { code: 'unauthorized', message: 'admin only', details: {} }];
    const plain = await cli(['tools'], api);
    const listed = await cli(['tools', 'list'], api);
    expect(listed.code).toBe(0);
    expect(listed.out).toBe(plain.out);
    const other = await cli(['tools', 'show'], api);
    expect(other.code).not.toBe(0);
    expect(other.err).toContain("unknown tools command 'show'");
    expect(other.sent).toEqual([]);
  });

  it('event lines say a reducer answer, a tool result and an operation start in words', () => {
    const at = Date.UTC(2026, 0, 1);
    const line = (kind: string, data: unknown, operation_id?: string) =>
      formatEvent({ seq: 1, at, kind, data, ...(operation_id ? { operation_id } : {}) } as never);
    expect(
      line('reducer_answered', {
        event_seq: 1,
        state_rev: 1,
        effects: [{ effect_id: 'e1', kind: 'request_model_turn' }],
      }),
    ).toBe('#   1  00:00:00.000  reducer_answered        answered event #1: asks for a model turn');
    expect(line('reducer_answered', { event_seq: 4, state_rev: 2, effects: [] })).toMatch(
      /answered event #4 with no new steps$/,
    );
    expect(
      line('tool_result', {
        call_id: 'c1',
        tool: 'echo',
        envelope: { status: 'succeeded', output: { x: 1 } },
      }),
    ).toMatch(/tool_result\s+echo succeeded$/);
    expect(line('operation_started', { kind: 'model_turn', attempt: 1 }, 'run_1/op/1')).toMatch(
      /operation_started\s+run_1\/op\/1 model turn, attempt 1$/,
    );
    expect(line('operation_started', { kind: 'tool_call', attempt: 2, tool: 'echo' }, 'run_1/op/2')).toMatch(
      /run_1\/op\/2 tool call echo, attempt 2$/,
    );
    expect(line('paused', { reason: 'paused by control' })).toMatch(
      /paused by a person \(a pause control\)$/,
    );
    // Data of a shape without words still shows, as JSON.
    expect(line('tool_result', { surprise: true })).toMatch(/\{"surprise":true\}$/);
  });

  it('tools shows what the published policy does with a call beside what the tool declares', async () => {
    const policy = {
      rules: [
        { effect: 'require_approval', tools: ['lookup'] },
        { effect: 'deny', tools: ['lookup'], principal_kinds: ['agent'] },
      ],
      default_effect: 'allow',
    };
    const r = await cli(['tools'], (s) =>
      s.path === '/v1/tools'
        ? [200, { tools: [lookupTool('never'), { ...lookupTool('never'), name: 'echo' }] }]
        : s.path === '/admin/policy'
          ? [200, listing('policy', [{ name: 'default', version: '1', body: policy }], 1)]
          : [200, listing('tools', [{ name: 'lookup', version: '1.2.0', body: {} }], 3)],
    );
    const rows = r.out.split('\n');
    expect(rows[0]).toMatch(/^NAME\s+VERSION\s+FROM\s+RISK/);
    expect(rows[1]).toMatch(
      /^lookup\s+1\.2\.0\s+registry\s+low\s+no\s+never\s+approval required; 1 rule\(s\) for some callers\s+finds things$/,
    );
    expect(rows[2]).toMatch(
      /^echo\s+1\.2\.0\s+built in\s+low\s+no\s+never\s+allow \(default\)\s+finds things$/,
    );
    expect(r.out).toContain('"default" version 1 (policy registry version 1)');
    const none = await cli(['tools'], (s) =>
      s.path === '/v1/tools'
        ? [200, { tools: [lookupTool('always')] }]
        : [200, listing(s.path.slice('/admin/'.length), [], 0)],
    );
    expect(none.out.split('\n')[1]).toMatch(/\salways\s+in-code rules\s/);
    expect(none.out).toContain('no policy is published');
  });
});

describe('agent-runs lease', () => {
  const view = (status: LeaseView['status'], client_driven: boolean): LeaseView => ({
    run_id: 'run_1',
    client_driven,
    status,
    epoch: 2,
    lease: null,
    expires_in_ms: null,
    operation: null,
    queued_steers: 0,
    open_requests: 0,
  });

  it('says a client-driven run without a lease waits for a client, and an ended run waits for nothing', () => {
    expect(formatLease(view('queued', true))).toMatch(/lease\s+none \(the run waits for a client\)/);
    expect(formatLease(view('completed', true))).toMatch(/lease\s+none \(the run ended\)/);
    expect(formatLease(view('queued', false))).toMatch(/lease\s+none\n/);
    const held = formatLease({
      ...view('running', true),
      lease: { owner: 'me', epoch: 2, expires_at: 1 },
      expires_in_ms: 4_000,
    } as LeaseView);
    expect(held).toMatch(/lease\s+held by me, expires in 4\.0 s\n/);
    expect(held.match(/epoch/g)).toHaveLength(1);
  });
});

describe('agent-runs configuration and errors', () => {
  it('reads the URL and token from .agent-runs/local.json, and sends that token only to that URL', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'agent-runs-cli-'));
    writeLocalState({ url: 'http://127.0.0.1:8787', token: 'local-tok' }, cwd);
    const local = await cli(['tools'], () => [200, { tools: [] }], { cwd, url: false });
    expect(local.sent[0]?.headers.authorization).toBe('Bearer local-tok');
    expect(local.out).toBe('no tools registered');

    const elsewhere = await cli(['tools'], () => [200, { tools: [] }], { cwd });
    expect(elsewhere.sent[0]?.headers.authorization).toBeUndefined();

    const env = await cli(['tools'], () => [200, { tools: [] }], {
      cwd,
      url: false,
      env: { AGENT_RUNS_URL: 'http://env.test', AGENT_RUNS_TOKEN: 'env-tok' },
    });
    expect(env.sent[0]?.headers.authorization).toBe('Bearer env-tok');
  });

  it('explains how to get a URL when there is none', async () => {
    const r = await cli(['tools'], undefined, { url: false });
    expect(r).toMatchObject({ code: 1, sent: [] });
    expect(r.err).toMatch(/^error: no API URL: pass --url, set AGENT_RUNS_URL, or start the local stack/);
  });

  it('prints API errors with their code and validation paths, as JSON with --json', async () => {
    const body = {
      code: 'validation_failed',
      message: 'invalid request: field subject.path: too short',
      details: { issues: [{ path: 'subject.path', code: 'too_small', message: 'too short' }] },
    };
    const human = await cli(['runs', 'create', '--workspace', 'ai', '--path', 'x'], () => [400, body]);
    expect(human.code).toBe(1);
    expect(human.err).toBe(
      'error: validation_failed: invalid request: field subject.path: too short\n  subject.path: too short',
    );
    const json = await cli(['--json', 'runs', 'get', 'run_x'], () => [
      404,
      { code: 'run_not_found', message: 'gone', details: {} },
    ]);
    expect(JSON.parse(json.err)).toEqual({
      error: { code: 'run_not_found', status: 404, message: 'gone', details: {} },
    });
  });

  it('replay refuses an unknown --world, and --final-db without the live world, before starting anything', async () => {
    const world = await cli(['replay', 'trajectories.json', '--world', 'simulated'], undefined, {
      url: false,
    });
    expect(world).toMatchObject({ code: 1, sent: [] });
    expect(world.err).toBe('error: --world must be recorded or live (got simulated)');
    const finalDb = await cli(['replay', 'trajectories.json', '--final-db', 'out'], undefined, {
      url: false,
    });
    expect(finalDb).toMatchObject({ code: 1, sent: [] });
    expect(finalDb.err).toBe('error: --db and --final-db need --world live');
  });

  it('fails on an unknown command with commander usage on stderr', async () => {
    const r = await cli(['explode']);
    expect(r.code).toBe(1);
    expect(r.err).toContain("unknown command 'explode'");
  });

  it('builds the program from the command modules listed in bin/agent-runs.ts', async () => {
    expect(COMMANDS.map((m) => m.name)).toEqual(
      expect.arrayContaining(['runs', 'events', 'controls', 'tools', 'functions']),
    );
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const name of [
      'runs',
      'events',
      'stop',
      'pause',
      'resume',
      'steer',
      'approve',
      'answer',
      'deliver',
      'tools',
    ]) {
      expect(help.out).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
    }
  });
});

describe('agent-runs registry', () => {
  it('publishes a document from @file to the kind named, and says whether it was new', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-registry-'));
    const file = join(dir, 'agent.json');
    const agent = { agent_id: 'functions:/agents/x', acts_for: { users: ['alice'] }, tools: ['*'] };
    writeFileSync(file, JSON.stringify(agent));
    const result = { kind: 'agents', name: agent.agent_id, version: '2', registry_version: 7, created: true };
    const r = await cli(['registry', 'publish', 'agents', `@${file}`], () => [201, result]);
    expect(r.code).toBe(0);
    expect(r.sent[0]).toMatchObject({ method: 'POST', path: '/admin/agents', body: agent });
    expect(r.out).toBe(
      'published agent "functions:/agents/x" version 2; the agents registry is at version 7 now (runs created from now on use it)',
    );
    const again = await cli(['registry', 'publish', 'agents', JSON.stringify(agent)], () => [
      200,
      { ...result, created: false },
    ]);
    expect(again.out).toMatch(/^already published: /);
  });

  it('lists a registry in words: an empty tools registry says where the built-in tools are', async () => {
    const tools = await cli(['registry', 'list', 'tools'], () => [
      200,
      { kind: 'tools', registry_version: 0, entries: [] },
    ]);
    expect(tools.out).toContain(
      'tools registry version 0 (one more with each publication)\n  nothing published',
    );
    expect(tools.out).toContain('`agent-runs tools` lists every tool');
    const policy = await cli(['registry', 'list', 'policy'], () => [
      200,
      {
        kind: 'policy',
        registry_version: 2,
        entries: [
          {
            kind: 'policy',
            name: 'default',
            version: '2',
            body: { rules: [], default_effect: 'allow' },
            digest: 'a'.repeat(64),
            published_at: 1,
            published_by: { kind: 'user', id: 'root' },
            registry_version: 2,
          },
        ],
      },
    ]);
    expect(policy.out).toBe(
      'policy registry version 2 (one more with each publication)\n  policy "default" (the one policy of the deployment) version 2',
    );
  });

  it('reads one version of an entry with --at, and refuses an unknown kind without a request', async () => {
    const entry = {
      kind: 'tools',
      name: 'lookup',
      version: '1.0.0',
      body: { name: 'lookup' },
      digest: 'a'.repeat(64),
      published_at: 1,
      published_by: { kind: 'user', id: 'root' },
      registry_version: 1,
    };
    const r = await cli(['registry', 'get', 'tools', 'lookup', '--at', '1.0.0'], () => [
      200,
      { entry, versions: ['1.0.0', '1.1.0'] },
    ]);
    expect(r.code).toBe(0);
    expect(r.sent[0]).toMatchObject({
      path: '/admin/tools/entry',
      query: { name: 'lookup', version: '1.0.0' },
    });
    expect(r.out).toContain('tool "lookup" version 1.0.0 (published versions: 1.0.0, 1.1.0)');
    const bad = await cli(['registry', 'list', 'widgets']);
    expect(bad.code).not.toBe(0);
    expect(bad.sent).toEqual([]);
    expect(bad.err).toContain('kind must be one of tools, policy, agents');
  });
});
