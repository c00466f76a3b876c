/**
 * Why a run is not moving, in words, with the command that moves it on (lib/client/waiting.ts):
 * each reason for synthetic records. The e2e test (waiting-hints.e2e.test.ts) pastes every
 * command against the local stack.
 */
import { describe, expect, it } from 'vitest';
import { formatRun, formatWaiting } from '../../bin/commands/format.ts';
import { budgetUsed } from '../../lib/client/budget-use.ts';
import {
  cliInvocation,
  DEFAULT_LEASE_TIMING,
  durationWords,
  shellQuote,
  waitingReasons,
} from '../../lib/client/waiting.ts';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { treeUsed } from '../../lib/core/budgets.ts';
import { LEASE_TTL_MS } from '../../lib/core/run-machine/draft.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import { newRun, toolEffect } from '../support/runs.ts';

const T = 1_700_000_000_000;
const base = newRun({}, T);
const as = (patch: Record<string, unknown>) => ({ ...base, ...patch }) as unknown as RunRecord;

describe('why a run is not moving', () => {
  it('assumes the engine’s default lease timing', () => {
    expect(DEFAULT_LEASE_TIMING).toMatchObject({
      lease_ttl_ms: LEASE_TTL_MS,
      heartbeat_ms: 30_000,
      clock_skew_ms: defaultClockSkewMs(LEASE_TTL_MS),
      sweep_interval_ms: 60_000,
    });
  });

  it('names a worker that stopped renewing its lease, how long ago, and when the sweeper takes over', () => {
    const op = {
      op_id: 'run-1/op/3',
      kind: 'tool_call',
      effect_id: 'e1',
      effect: toolEffect(1),
      replay_safe: true,
      interruptible: true,
      attempt: 1,
      started_at: T,
    };
    // Renewed at T (expires T + 90 s); read 50 s later: one renewal missed.
    const run = as({
      status: 'running',
      lease: { owner: 'worker-7', expires_at: T + 90_000 },
      operation: op,
      open_requests: [],
    });
    const [reason] = waitingReasons(run, T + 50_000);
    expect(reason?.text).toBe(
      'lease held by worker worker-7, which stopped renewing it 50 s ago (during tool_call run-1/op/3): ' +
        'the runtime takes the run over in 70 s to 2 min 10 s, and the operation runs again',
    );
    expect(reason?.commands).toEqual([]);
    // A lease renewed within the heartbeat is a worker at work: nothing to explain.
    expect(waitingReasons(run, T + 20_000)).toEqual([]);
  });

  it('points at the child run for a child wait, never at deliver', () => {
    const request = {
      kind: 'result',
      request_id: 'req/1',
      effect_id: 'e',
      resume_key: 'child:run_c',
      op_id: 'run-1/op/2',
      tool: '/lib/raisin/agent-runs/delegate',
      opened_at: T,
      expires_at: null,
    };
    const [reason] = waitingReasons(
      as({ status: 'waiting', lease: null, operation: null, open_requests: [request] }),
      T,
    );
    expect(reason).toEqual({
      text: 'waiting for child run run_c to end (its outcome comes back as the result of /lib/raisin/agent-runs/delegate)',
      commands: ['agent-runs runs get run_c', "agent-runs stop run_c --reason 'the parent stops waiting'"],
      child_run_id: 'run_c',
    });
  });

  it('asks for a budget increase that lets the held operation through', () => {
    const run = as({
      status: 'paused',
      lease: null,
      operation: null,
      open_requests: [],
      pause_reason: 'budget_exceeded:max_turns',
      paused_from: 'queued',
      budgets: { max_turns: 3 },
      usage: { ...base.usage, turns: 3 },
    });
    expect(waitingReasons(run, T)).toEqual([
      {
        text: 'paused by budget max_turns (used 3 of 3): resume it with more',
        commands: [`agent-runs resume run-1 --budget-increase '{"max_turns":3}'`],
      },
    ]);
  });

  it('starts each command the way the CLI was run', () => {
    expect(cliInvocation({ npm_command: 'exec', npm_lifecycle_event: 'npx' })).toBe('npx agent-runs');
    // npx inside an npm script: exec wins over the script's name.
    expect(cliInvocation({ npm_command: 'exec', npm_lifecycle_event: 'demo' })).toBe('npx agent-runs');
    expect(cliInvocation({ npm_command: 'run', npm_lifecycle_event: 'agent-runs' })).toBe(
      'npm run agent-runs --',
    );
    expect(cliInvocation({ npm_command: 'run-script', npm_lifecycle_event: 'agent-runs' })).toBe(
      'npm run agent-runs --',
    );
    // Another npm script (npm run demo): the bin is in node_modules/.bin, reached by npx.
    expect(cliInvocation({ npm_command: 'run', npm_lifecycle_event: 'demo' })).toBe('npx agent-runs');
    expect(cliInvocation({})).toBe('agent-runs');
    expect(cliInvocation({ npm_lifecycle_event: '' })).toBe('agent-runs');

    const paused = as({
      status: 'paused',
      lease: null,
      operation: null,
      open_requests: [],
      pause_reason: 'provider_outage:bedrock',
      paused_from: 'queued',
    });
    expect(waitingReasons(paused, T, undefined, 'npm run agent-runs --')[0]?.commands).toEqual([
      'npm run agent-runs -- resume run-1',
    ]);
    expect(formatRun(paused, T, new Map(), 'npx agent-runs')).toContain('    $ npx agent-runs resume run-1');
  });

  it('shows a summary of several lines as rows under its key, a control character escaped', () => {
    const done = as({
      status: 'completed',
      lease: null,
      operation: null,
      open_requests: [],
      outcome: 'succeeded',
      terminal_reason: 'completed:succeeded',
      summary: 'The echo tool returned: x\nDone.\u001b[2J',
    });
    const lines = formatRun(done, T, new Map(), 'npx agent-runs').split('\n');
    const at = lines.findIndex((l) => l.startsWith('summary'));
    expect(lines[at]).toMatch(/^summary +The echo tool returned: x$/);
    expect(lines[at + 1]).toMatch(/^ +Done\.\\u001b\[2J$/);
    expect(lines.join('\n')).not.toContain('\\u000a');
  });

  it('says a reason, and a child’s explanation, once when two requests wait for the same child', () => {
    const wait = { text: 'waiting for child run run_c to end', commands: ['agent-runs runs get run_c'] };
    const lease = { text: 'lease held by worker w, which stopped renewing it 60 s ago', commands: [] };
    const lines = formatWaiting(
      [
        { ...wait, child_run_id: 'run_c' },
        { ...wait, child_run_id: 'run_c' },
      ],
      new Map([['run_c', [lease]]]),
    );
    expect(lines).toEqual([
      '  waiting for child run run_c to end',
      '    $ agent-runs runs get run_c',
      '    the child run:',
      `      ${lease.text}`,
    ]);
    // Different reasons stay, each with its own commands.
    const other = { text: 'waiting for approval req/1', commands: ['agent-runs approve x'] };
    expect(formatWaiting([other, wait])).toHaveLength(4);
  });

  it('quotes for a POSIX shell only what needs it', () => {
    expect(shellQuote('sha256:ab12')).toBe('sha256:ab12');
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote('{"a":1}')).toBe(`'{"a":1}'`);
  });

  it('prints the reasons and ready-to-paste commands under "waiting:" in runs get', () => {
    const approval = {
      kind: 'approval',
      request_id: 'req/1',
      effect_id: 'e',
      subject: { summary: 'charge 42', digest: 'sha256:d1' },
      opened_at: T,
      expires_at: null,
    };
    const text = formatRun(
      as({ status: 'waiting', lease: null, operation: null, open_requests: [approval] }),
      T,
    );
    expect(text).toContain(
      'waiting:\n  waiting for approval req/1: charge 42 (digest sha256:d1)\n' +
        '    $ agent-runs approve run-1 req/1 --digest sha256:d1\n' +
        "    $ agent-runs approve run-1 req/1 --digest sha256:d1 --reject --reason 'not now'",
    );
  });

  it('hints an answer with a placeholder the person replaces, or the first choice offered', () => {
    const question = (choices?: string[]) => ({
      kind: 'input',
      request_id: 'req/2',
      effect_id: 'e',
      question: 'which flight?',
      ...(choices === undefined ? {} : { choices }),
      opened_at: T,
      expires_at: null,
    });
    const waiting = (q: unknown) =>
      as({ status: 'waiting', lease: null, operation: null, open_requests: [q] });
    const [free] = waitingReasons(waiting(question()), T);
    expect(free?.commands).toEqual(["agent-runs answer run-1 req/2 '<your answer>'"]);
    expect(free?.text).toContain("put your answer in place of '<your answer>'");
    const [chosen] = waitingReasons(waiting(question(['AF12', 'BA7'])), T);
    expect(chosen?.commands).toEqual(['agent-runs answer run-1 req/2 AF12']);
    expect(chosen?.text).toContain('[AF12 | BA7]');
  });

  it('says an ended run waits for nothing, and a paused one who paused it', () => {
    const completed = as({
      status: 'completed',
      lease: null,
      operation: null,
      open_requests: [],
      terminal_reason: 'completed',
      outcome: 'succeeded',
      finished_at: T,
      owed: [],
    });
    expect(formatRun(completed, T)).toMatch(
      /\nwaiting: nothing: the run has ended \(completed, succeeded\)$/,
    );
    const stopped = as({
      status: 'stopped',
      lease: null,
      operation: null,
      open_requests: [],
      terminal_reason: 'stopped by control',
      finished_at: T,
      owed: [],
    });
    expect(formatRun(stopped, T)).toContain(
      'waiting: nothing: the run has ended (stopped by a person (a stop control))',
    );
    const paused = as({ status: 'paused', lease: null, operation: null, pause_reason: 'paused by control' });
    const text = formatRun(paused, T);
    expect(text).toMatch(/^paused\s+paused by a person \(a pause control\)$/m);
    expect(text).toContain('waiting:\n  paused (paused by a person (a pause control)): resume it when ready');
    expect(text).not.toContain('paused by control');
  });

  it('says durations above 90 s in minutes', () => {
    expect([5_000, 90_000, 91_000, 130_000, 180_000, 1_500_000].map(durationWords)).toEqual([
      '5 s',
      '90 s',
      '1 min 31 s',
      '2 min 10 s',
      '3 min',
      '25 min',
    ]);
  });

  it('says a client-driven run moves only when its client takes the lease, never blaming the poller', () => {
    const queued = as({
      status: 'queued',
      reducer: null,
      lease: null,
      operation: null,
      open_requests: [],
      updated_at: T,
    });
    const [reason] = waitingReasons(queued, T + 60_000);
    expect(reason?.text).toMatch(/^client-driven \(no reducer\): the server never steps it/);
    expect(reason?.commands).toEqual([]);
  });

  it('says when a client-driven run last heard from its client, and when the sweeper lets it go', () => {
    const running = (expires_at: number, updated_at = T - 180_000) =>
      as({
        status: 'running',
        reducer: null,
        lease: { owner: 'ai-sdk-1', expires_at },
        operation: null,
        open_requests: [],
        updated_at,
      });
    const [held] = waitingReasons(running(T + 30_000), T);
    expect(held?.text).toBe(
      `client-driven: last heard from client ai-sdk-1 3 min ago (its last write to the run); if it does not come back by ${new Date(T + 30_000).toISOString()} (in 30 s, when its lease ends unless it renews it), the runtime lets go of the run and the run waits, queued, for a client to take it again; until then the run moves only when that client writes its next step (the command below only shows who holds the lease; to end the run instead, stop it)`,
    );
    expect(waitingReasons(running(T + 30_000, T), T)[0]?.text).toContain(
      'last heard from client ai-sdk-1 just now',
    );
    expect(held?.commands).toEqual(['agent-runs lease run-1']);
    const timing = {
      lease_ttl_ms: 90_000,
      heartbeat_ms: 30_000,
      clock_skew_ms: 5_000,
      sweep_interval_ms: 60_000,
    };
    const [lapsed] = waitingReasons(running(T), T + 2_000, timing);
    expect(lapsed?.text).toBe(
      'client-driven: last heard from client ai-sdk-1 3 min 2 s ago (its last write to the run); its lease ran out 2 s ago, the runtime lets go of the run in 3 s to 63 s, and the run then waits, queued, for a client to take it again (the command below only shows who holds the lease; to end the run instead, stop it)',
    );
  });

  it('names the approval a client holding the lease waits for, with the approve command', () => {
    const approval = {
      kind: 'approval',
      request_id: 'run-1/req/1',
      effect_id: 'client:req:1',
      subject: { kind: 'tool_call', digest: 'd1', digest_alg: 'sha256:rfc8785', summary: 'issue_refund {}' },
      opened_at: T,
      expires_at: null,
    };
    const running = as({
      status: 'running',
      reducer: null,
      lease: { owner: 'ai-sdk-1', expires_at: T + 30_000 },
      operation: null,
      open_requests: [approval],
    });
    const [reason] = waitingReasons(running, T + 1_000);
    expect(reason?.text).toBe('waiting for approval run-1/req/1: issue_refund {} (digest d1)');
    expect(reason?.commands.join('\n')).toContain('approve run-1 run-1/req/1 --digest d1');
  });
});

describe('budget use as the hints count it', () => {
  it('counts a tree limit as core does: own usage, children charged back and live reservations', () => {
    const parent: RunRecord = {
      ...base,
      usage: { ...base.usage, input_tokens: 10, output_tokens: 5 },
      tree_usage: { max_total_tokens: 20 },
      child_terms: { child1: { reserved: { max_total_tokens: 30 }, wait: true } },
    };
    expect(budgetUsed(parent, 'max_total_tokens', T)).toBe(treeUsed(parent, 'max_total_tokens'));
    expect(budgetUsed(parent, 'max_total_tokens', T)).toBe(65);
  });
});
