/**
 * Safe reducer upgrades in the web console, in a real browser (Debian's chromium, driven by playwright-core)
 * against the local stack: time travel on a run's page (an event's "View the run at #seq", the
 * "View at event #" form and `?at=SEQ` show the state, plan and open requests as they stood then,
 * read from `GET /runs/{id}/at/{seq}`, labelled as the past, with a way back to now; the view's
 * code is not fetched by a page drawn now), and "Would the new reducer agree?" on a run paused
 * `reducer_changed`, once for an artifact that decides the same and once for one that does not,
 * each verdict the one `POST /admin/reducers/check` gives. axe finds no serious accessibility
 * violation in the past view. Screenshots go to test-artifacts/console/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESPOND_ITEM_NOTE } from '../../console/src/model/words.ts';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { AGENT_LOOP_PATH, readAgentLoopSource } from '../../lib/reducers/index.ts';
import {
  ARTIFACTS_DIR,
  axeViolations,
  buildConsole,
  CONSOLE_TOOLS_CONTEXT,
  type ConsoleStack,
  launchChromium,
  startConsoleStack,
} from '../support/console-stack.ts';

let dir: string;
let cs: ConsoleStack;
let browser: Browser;
let client: AgentRunsClient;
const contexts: BrowserContext[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-runs-console-travel-'));
  await buildConsole(dir);
  cs = await startConsoleStack(dir);
  client = createClient({ baseUrl: cs.stack.url, token: cs.stack.token });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await cs?.stack.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** A page signed in through the start banner's link, then sent to the run's page (`search` after it). */
async function runPage(runId: string, search = '', bypassCSP = false): Promise<Page> {
  // bypassCSP only where axe is injected (an inline script the console's policy refuses).
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP });
  contexts.push(context);
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(cs.stack.consoleUrl ?? '');
  await page.getByRole('heading', { name: 'Runs', exact: true }).waitFor();
  await page.goto(`${cs.stack.url}/console/runs/${runId}${search}`);
  await page.locator('#run-title').waitFor();
  return page;
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS_DIR, `${name}.png`), fullPage: true });

async function createRun(scenario: string, functionPath: string): Promise<RunRecord> {
  const { run } = await client.createRun({
    subject: { workspace: 'console', path: `/${scenario}/${crypto.randomUUID().slice(0, 8)}` },
    reducer: { function_path: functionPath },
    input: 'Please charge the customer 42 for the repair.',
    context: { mode: 'conversation', tools: CONSOLE_TOOLS_CONTEXT, instructions: 'You are a billing agent.' },
    budgets: { max_turns: 10, max_total_tokens: 5_000 },
  });
  return run;
}

async function until(runId: string, done: (run: RunRecord) => boolean, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await client.getRun(runId);
    if (done(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} stuck: ${run.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits for the run's approval and approves it through the API, quoting its digest. */
async function approveByApi(runId: string): Promise<void> {
  const waiting = await until(runId, (r) => r.open_requests.some((q) => q.kind === 'approval'));
  const approval = waiting.open_requests.find((q) => q.kind === 'approval');
  if (approval?.kind !== 'approval') throw new Error('no approval');
  await client.approve(runId, approval.request_id, approval.subject.digest);
}

async function eventsOf(runId: string): Promise<RunEvent[]> {
  return (await client.events(runId, { limit: 1000 })).events;
}

const pastHeading = (page: Page, seq: number) =>
  page.getByRole('heading', { name: `The past: the run at event #${seq}` });

describe('time travel and reducer checks in the console', { timeout: 120_000 }, () => {
  it('shows the run as it stood at a chosen seq, labelled as the past, and goes back to now', async () => {
    // Prepare: a run past its approval, now asking which receipt format.
    const run = await createRun('travel', AGENT_LOOP_PATH);
    await approveByApi(run.run_id);
    const now = await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'input'));
    const events = await eventsOf(run.run_id);
    const opened = events.find((e) => e.kind === 'request_opened');
    if (opened === undefined) throw new Error('no request_opened event');
    const then = await client.getRunAtSeq(run.run_id, opened.seq);
    const approvalThen = then.open_requests.find((q) => q.kind === 'approval');
    expect(approvalThen).toBeDefined();

    // Act: open the approval's event in the timeline and travel to it.
    const page = await runPage(run.run_id, '', true);
    await page.getByRole('heading', { name: 'Needs you' }).waitFor();
    await page.locator(`#event-${opened.seq} summary`).click();
    await page.getByRole('button', { name: `View the run at event #${opened.seq}` }).click();

    // Assess: the past, as the API reads it, in place of what needs the user now.
    await pastHeading(page, opened.seq).waitFor();
    await page.getByTestId('past-state-rev').waitFor();
    expect(new URL(page.url()).search).toBe(`?at=${opened.seq}`);
    const past = page.getByTestId('past-view');
    expect(await past.getByRole('status').textContent()).toContain(
      `As it stood after event #${opened.seq} of`,
    );
    expect(await page.getByTestId('past-state-rev').textContent()).toBe(String(then.state_rev));
    const requests = page.getByTestId('past-requests');
    expect(await requests.locator(`[data-request-id="${approvalThen?.request_id}"]`).textContent()).toMatch(
      /^approval: /,
    );
    expect(await page.getByRole('heading', { name: 'Needs you' }).count()).toBe(0);
    expect(await page.locator(`#event-${opened.seq}`).getAttribute('aria-current')).toBe('step');
    // The agent loop's own last plan item says so in the past's plan too.
    expect(await past.locator('li[data-key="respond"]').getByTestId('plan-note').textContent()).toBe(
      ` · ${RESPOND_ITEM_NOTE}`,
    );
    await shot(page, 'run-page-past');
    expect(await axeViolations(page)).toEqual([]);

    // Act and assess: one step later, then back to now.
    await past.getByRole('button', { name: `#${opened.seq + 1} ▸` }).click();
    await pastHeading(page, opened.seq + 1).waitFor();
    await page.getByRole('button', { name: 'Back to now' }).click();
    await page.getByRole('heading', { name: 'Needs you' }).waitFor();
    expect(await page.getByTestId('past-view').count()).toBe(0);
    expect(new URL(page.url()).search).toBe('');
    const question = now.open_requests.find((q) => q.kind === 'input');
    expect(await page.locator(`[data-request-id="${question?.request_id}"]`).count()).toBe(1);
    expect(pageErrors).toEqual([]);
  });

  it('reads a seq typed in "View at event #", and says so when the run has no such seq', async () => {
    const run = await createRun('travel-form', AGENT_LOOP_PATH);
    await until(run.run_id, (r) => r.status === 'waiting');
    const page = await runPage(run.run_id);

    await page.getByLabel('View at event #').fill('1');
    await page.getByRole('button', { name: 'View', exact: true }).click();

    await pastHeading(page, 1).waitFor();
    await page.getByTestId('past-state-rev').waitFor();
    const past = page.getByTestId('past-view');
    await past.getByText('None.').first().waitFor();
    expect(await page.getByTestId('past-state-rev').textContent()).toBe('0');
    expect(await past.getByRole('button', { name: '◂ #0' }).isDisabled()).toBe(true);

    // The last seq: no step later than now.
    const last = (await client.getRun(run.run_id)).last_seq;
    await page.getByLabel('View at event #').fill(String(last));
    await page.getByRole('button', { name: 'View', exact: true }).click();
    await pastHeading(page, last).waitFor();
    expect(await past.getByRole('button', { name: `#${last + 1} ▸` }).isDisabled()).toBe(true);

    const missing = await runPage(run.run_id, '?at=999999');
    await missing.getByTestId('past-view').getByRole('alert').waitFor();
    expect(await missing.getByTestId('past-view').getByRole('alert').textContent()).toMatch(/seq 999999/);
    expect(pageErrors).toEqual([]);
  });

  it('does not fetch the past view to draw a run page now', async () => {
    const run = await createRun('travel-lazy', AGENT_LOOP_PATH);
    const page = await runPage(run.run_id);
    await page.locator('.timeline li').first().waitFor();

    const scripts = await page.evaluate(() =>
      performance.getEntriesByType('resource').map((e: { name: string }) => e.name),
    );
    expect(scripts.filter((s: string) => s.endsWith('.js')).length).toBeGreaterThan(0);
    expect(scripts.filter((s: string) => /\/PastView-[^/]*\.js$/.test(s))).toEqual([]);

    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}?at=1`);
    await pastHeading(page, 1).waitFor();
    const after = await page.evaluate(() =>
      performance.getEntriesByType('resource').map((e: { name: string }) => e.name),
    );
    expect(after.filter((s: string) => /\/PastView-[^/]*\.js$/.test(s)).length).toBe(1);
  });
});

/** A run on `path` (the default reducer published there) paused reducer_changed by `next` at the same path. */
async function pausedOnChange(scenario: string, next: string): Promise<RunRecord> {
  const path = `/console-check/${scenario}-${crypto.randomUUID().slice(0, 8)}`;
  const encode = (text: string) => new TextEncoder().encode(text);
  await client.putFunction(path, encode(readAgentLoopSource()), 'js');
  const run = await createRun(scenario, path);
  await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'approval'));
  await client.putFunction(path, encode(next), 'js');
  await approveByApi(run.run_id);
  return until(run.run_id, (r) => r.status === 'paused' && r.pause_reason === 'reducer_changed');
}

/** The default reducer, changed to add a checkpoint to each answer that writes state. */
function divergentReducer(): string {
  const source = readAgentLoopSource().replace(
    'export function reduce(request) {',
    'function reduceV1(request) {',
  );
  return `${source}
export function reduce(request) {
  const answer = reduceV1(request);
  if (answer.refused == null && answer.state_rev !== request.state_rev) {
    answer.effects = [...answer.effects, { effect_id: answer.state_rev + ':' + answer.effects.length, kind: 'checkpoint', reason: 'upgrade' }];
  }
  return answer;
}
`;
}

describe('"Would the new reducer agree?" on a run paused reducer_changed', { timeout: 120_000 }, () => {
  it('says the new reducer agrees when the artifact decides the same on the run', async () => {
    const run = await pausedOnChange('agree', `${readAgentLoopSource()}\n// v2: comments only\n`);
    const report = await client.checkReducer({
      artifact: { function_path: run.reducer?.function_path },
      run_ids: [run.run_id],
    });
    const checked = report.runs.find((r) => r.run_id === run.run_id) as Record<string, unknown>;
    expect(checked.result).toBe('identical');

    const page = await runPage(run.run_id);
    await page.getByRole('button', { name: 'Would the new reducer agree?' }).click();

    const verdict = page.locator('.reducer-check [role="status"]');
    await verdict.waitFor();
    expect(await verdict.textContent()).toMatch(
      new RegExp(`^the new reducer \\([0-9a-z]+\\) agrees on all ${String(checked.deliveries)} decisions$`),
    );
    await shot(page, 'reducer-check-agrees');
    expect(pageErrors).toEqual([]);
  });

  it('names the first seq where a changed artifact decides differently', async () => {
    const run = await pausedOnChange('diverge', divergentReducer());
    const report = await client.checkReducer({
      artifact: { function_path: run.reducer?.function_path },
      run_ids: [run.run_id],
    });
    const checked = report.runs.find((r) => r.run_id === run.run_id) as Record<string, unknown>;
    expect(checked.result).toBe('diverged');

    const page = await runPage(run.run_id);
    await page.getByRole('button', { name: 'Would the new reducer agree?' }).click();

    const verdict = page.locator('.reducer-check [role="status"]');
    await verdict.waitFor();
    expect(await verdict.textContent()).toContain(
      `decides differently at event #${String(checked.event_seq)}`,
    );
    expect(await verdict.getAttribute('class')).toBe('error');
    await shot(page, 'reducer-check-diverges');
    expect(pageErrors).toEqual([]);
  });
});
