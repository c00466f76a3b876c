/**
 * The web console in a real browser (Debian's chromium, driven by playwright-core) against the
 * local stack: sign in (the start link's token, a pasted token), find a run in the list, watch
 * it advance live, approve its mutating tool call, answer its question, steer it, stop it, and
 * check each through the API's event log; a stale approval shows digest_mismatch; the
 * transcript shows the tool envelope; a phone-sized viewport works and axe finds no serious
 * accessibility violation. Screenshots of the main views go to test-artifacts/console/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { steerWords } from '../../console/src/model/run-mode.ts';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import {
  ARTIFACTS_DIR,
  axeViolations,
  buildConsole,
  CONSOLE_TOOLS_CONTEXT,
  type ConsoleStack,
  launchChromium,
  startConsoleStack,
} from '../support/console-stack.ts';

/** What the page functions read of the browser's document (this file is type-checked for Node). */
interface BrowserDocument {
  document: { activeElement: { textContent: string | null } | null };
}

let dir: string;
let cs: ConsoleStack;
let browser: Browser;
let client: AgentRunsClient;
const contexts: BrowserContext[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-runs-console-'));
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

async function newPage(viewport = { width: 1280, height: 800 }, bypassCSP = false): Promise<Page> {
  // bypassCSP only where axe is injected (an inline script the console's policy refuses).
  const context = await browser.newContext({ viewport, bypassCSP });
  contexts.push(context);
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
  return page;
}

/** A page signed in through the start banner's link. */
async function signedIn(viewport?: { width: number; height: number }, bypassCSP = false): Promise<Page> {
  const page = await newPage(viewport, bypassCSP);
  await page.goto(cs.stack.consoleUrl ?? '');
  await page.getByRole('heading', { name: 'Runs', exact: true }).waitFor();
  return page;
}

const shot = (page: Page, name: string, fullPage = false) =>
  page.screenshot({ path: join(ARTIFACTS_DIR, `${name}.png`), fullPage });

function subject(scenario: string) {
  return { workspace: 'console', path: `/${scenario}/${crypto.randomUUID().slice(0, 8)}` };
}

async function createRun(
  scenario: string,
  objective?: string,
  budgets: Record<string, number> = { max_turns: 10, max_total_tokens: 5_000 },
): Promise<RunRecord> {
  const { run } = await client.createRun({
    subject: subject(scenario),
    reducer: { function_path: AGENT_LOOP_PATH },
    input: 'Please charge the customer 42 for the repair.',
    ...(objective !== undefined ? { objective } : {}),
    context: { mode: 'conversation', tools: CONSOLE_TOOLS_CONTEXT, instructions: 'You are a billing agent.' },
    budgets,
  });
  return run;
}

/** Approves the run's open approval through the API, quoting its digest. */
async function approveByApi(runId: string): Promise<void> {
  const waiting = await until(runId, (r) => r.open_requests.some((q) => q.kind === 'approval'));
  const approval = waiting.open_requests.find((q) => q.kind === 'approval');
  if (approval?.kind !== 'approval') throw new Error('no approval');
  await client.approve(runId, approval.request_id, approval.subject.digest);
}

async function until(
  runId: string,
  done: (run: RunRecord) => boolean,
  timeoutMs = 30_000,
): Promise<RunRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await client.getRun(runId);
    if (done(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} stuck: ${run.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function eventsOf(runId: string): Promise<RunEvent[]> {
  return (await client.events(runId, { limit: 1000 })).events;
}

/**
 * The text of the acknowledgement region that shows `text`, once it does: under Controls, or, for
 * an answer to a request on a live run, under "Needs you" (shown there only, not twice).
 */
async function ackShown(page: Page, text: string): Promise<string> {
  const acks = page
    .getByRole('status', { name: /^(Control acknowledgements|Acknowledgements of what you sent here)$/ })
    .filter({ hasText: text });
  await acks.getByText(text).first().waitFor();
  expect(await page.getByRole('status').filter({ hasText: text }).count()).toBe(1);
  return (await acks.first().textContent()) ?? '';
}

// A browser and a stack on a busy 2-core machine: generous per-test time (no test asserts speed).
describe('the web console in chromium', { timeout: 120_000 }, () => {
  it('signs in with the token of the start link and keeps it out of the address bar', async () => {
    const page = await signedIn();

    expect(page.url()).not.toContain('token=');
    const stored = await page.evaluate(() => localStorage.getItem('agent-runs.console.session'));
    expect(JSON.parse(stored ?? '{}')).toMatchObject({ token: cs.stack.token, via: 'token' });
  });

  it('refuses a wrong pasted token with a clear message, and signs in with the right one', async () => {
    const page = await newPage();
    await page.goto(`${cs.stack.url}/console/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await shot(page, 'login');

    await page.getByLabel('Bearer token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('did not accept this token (401');

    await page.getByLabel('Bearer token').fill(cs.stack.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Runs', exact: true }).waitFor();
  });

  it('finds a run by status and subject prefix and opens it from the list', async () => {
    const run = await createRun('find');
    await until(run.run_id, (r) => r.status === 'waiting');
    const page = await signedIn();

    await page.getByLabel('Status').selectOption('waiting');
    await page.getByLabel('Subject prefix').fill(`console:${run.subject.path}`);
    const link = page.getByRole('link', { name: run.run_id });
    await link.waitFor();
    expect(await page.locator('tbody tr').count()).toBe(1);
    expect(page.url()).toContain('status=waiting');
    await shot(page, 'runs-list');

    await link.click();
    await page.getByRole('heading', { name: /Needs you/ }).waitFor();
    expect(page.url()).toContain(`/console/runs/${run.run_id}`);
  });

  it('follows a run live; approves the charge, answers, steers and stops it; the API log shows each', async () => {
    const run = await createRun('journey', 'Charge the customer for the repair');
    const page = await signedIn();
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    await page.getByRole('heading', { name: 'Events' }).waitFor();
    // A marker that a reload would lose: every later change must arrive without one.
    await page.evaluate(() => {
      (globalThis as unknown as { marker: number }).marker = 1;
    });

    // Live: the model's turn and the approval arrive while the page is open.
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor({ timeout: 20_000 });
    await page.locator('li.event[data-kind="request_opened"]').first().waitFor();
    // The timeline follows the run over the live socket (which may still be connecting on a loaded machine).
    await page.getByTestId('feed-state').getByText('live (WebSocket)').waitFor({ timeout: 30_000 });
    // The digest reads short, without its algorithm; the full value is one click away.
    const shortDigest = (await page.getByTestId('approval-digest').textContent()) ?? '';
    expect(shortDigest).toMatch(/^[0-9a-f]{12}…$/);
    await page.locator('article.request').getByRole('button', { name: 'show full' }).click();
    const digest = (await page.getByTestId('approval-digest-full').textContent()) ?? '';
    expect(digest).toMatch(/^sha256:rfc8785:[0-9a-f]{64}$/);
    expect(digest.split(':').pop()?.startsWith(shortDigest.slice(0, 12))).toBe(true);
    await shot(page, 'run-approval', true);
    expect(cs.charges).toEqual([]);

    await approve.click();
    expect(await ackShown(page, 'approve: applied')).toMatch(/approve: applied \(event \d+\)/);
    // The charge ran, and the model asks its question.
    const answer = page.getByLabel('Your answer');
    await answer.waitFor({ timeout: 20_000 });
    // Where the question appears, what the run's mode means for it.
    expect(await page.getByTestId('mode-note').textContent()).toMatch(/^Conversation mode: every reply/);
    await page.getByText('Which receipt format do you want?').first().waitFor();
    expect(cs.charges).toEqual([42]);

    await answer.fill('PDF please');
    await page.getByRole('button', { name: 'Send answer' }).click();
    await ackShown(page, 'answer: applied');
    await page.getByText('Noted: PDF please. Anything else?').first().waitFor({ timeout: 20_000 });

    // On a conversation run a steer is the person's next message, and the box says so.
    expect(await page.getByTestId('steer-hint').textContent()).toBe(steerWords('conversation', false).hint);
    await page.getByLabel('Steer the run').fill('Also email the receipt');
    await page.getByRole('button', { name: 'Send steer' }).click();
    await ackShown(page, 'steer: applied');
    await page
      .getByText('Noted: Also email the receipt. Anything else?')
      .first()
      .waitFor({ timeout: 20_000 });
    await shot(page, 'run-page');

    await page.getByLabel('Stop reason (optional)').fill('done for today');
    await page.getByRole('button', { name: 'Stop run' }).click();
    await ackShown(page, 'stop: applied');
    await page.locator('.run-header .badge-stopped').waitFor({ timeout: 20_000 });
    await page.locator('li.event[data-kind="stopped"]').waitFor();
    // The header says why it stopped (the reason is on the stopped event, not on the record).
    await page.getByTestId('status-detail').getByText('stopped: done for today').waitFor({ timeout: 20_000 });
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(1);

    // Each action through the API's log: what the page did is what the run recorded. The
    // reducer still answers the stop after it, so both sides are read once the run has settled.
    await until(run.run_id, (r) => r.status === 'stopped');
    await page
      .getByTestId('feed-state')
      .getByText('no more will come', { exact: false })
      .waitFor({ timeout: 20_000 });
    const events = await eventsOf(run.run_id);
    const resolved = events.filter((e) => e.kind === 'request_resolved').map((e) => e.data);
    expect(resolved).toEqual([
      expect.objectContaining({
        kind: 'approval',
        decision: 'approved',
        subject_digest: digest.split(':').pop(),
      }),
      expect.objectContaining({ kind: 'input', value: 'PDF please' }),
    ]);
    expect(events.find((e) => e.kind === 'steer_consumed')?.data).toMatchObject({
      input: 'Also email the receipt',
    });
    expect(events.find((e) => e.kind === 'stopped')?.data).toMatchObject({ reason: 'done for today' });
    // Every control the page sent carried its own control_id (no reuse across actions).
    const controlIds = events
      .filter((e) => ['steer_queued', 'stopped'].includes(e.kind))
      .map((e) => e.data.control_id);
    expect(new Set(controlIds).size).toBe(controlIds.length);
    // The timeline shows the whole story, newest first.
    const shown = await page
      .locator('li.event')
      // (cast: with React's global types in the program, its empty HTMLElement hides getAttribute)
      .evaluateAll((rows) =>
        rows.map((r) =>
          (r as unknown as { getAttribute(name: string): string | null }).getAttribute('data-kind'),
        ),
      );
    expect(shown[0]).toBe(events[events.length - 1]?.kind);
    expect(shown).toHaveLength(events.length);
    expect(pageErrors).toEqual([]);
  });

  it('shows digest_mismatch plainly when the approval on the page is stale, and changes nothing', async () => {
    const run = await createRun('stale');
    await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'approval'));
    const page = await signedIn();
    // The page's copy of the run is from before a change: its approval digest is not the run's.
    await page.route(`**/runs/${run.run_id}`, async (route) => {
      if (route.request().resourceType() !== 'fetch') return route.continue();
      // A poll the loaded server resets fails as it would unrouted (not as an unhandled rejection).
      const response = await route.fetch().catch(() => null);
      if (response === null) return route.abort('connectionreset');
      const body = (await response.json()) as RunRecord;
      for (const q of body.open_requests)
        if (q.kind === 'approval') q.subject.digest = `0${q.subject.digest.slice(1)}`;
      await route.fulfill({ response, json: body });
    });
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    await page.getByRole('button', { name: 'Approve' }).click();

    const text = await ackShown(page, 'rejected, digest_mismatch');
    expect(text).toContain('what you approved is not what the run asks now');
    await shot(page, 'run-digest-mismatch');
    const after = await client.getRun(run.run_id);
    expect(after.status).toBe('waiting');
    expect(after.open_requests.map((q) => q.kind)).toEqual(['approval']);
    expect(cs.charges.filter((c) => c === 42)).toHaveLength(1); // only the journey's charge
    // Its polls would go on through the route until the suite ends: stop them here.
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.context().close();
  });

  it('resumes a run paused by its budget with the budget increase the form offers', async () => {
    const run = await createRun('budget', undefined, { max_turns: 1 });
    await approveByApi(run.run_id);
    // The charge ran; the next model turn would be the second: the run pauses on max_turns.
    await until(run.run_id, (r) => r.status === 'paused');
    const page = await signedIn();
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);

    await page.getByRole('heading', { name: 'Paused: the max turns budget is used up' }).waitFor();
    // Plain words: no "(from queued)", no lease jargon on a server-driven run.
    const header = (await page.locator('.run-header').textContent()) ?? '';
    expect(header).toContain('paused: the max turns budget is used up; raise it to go on');
    expect(header).not.toMatch(/from queued|epoch|Lease/);
    expect(await page.getByTestId('lease').textContent()).toBe('the service: idle while the run is paused');
    expect(await page.locator('#usage').textContent()).toMatch(/1 model call · 1 tool call ·/);
    const increase = page.getByLabel('max_turns (now 1)');
    expect(await increase.inputValue()).toBe('1');
    await increase.fill('3');
    await shot(page, 'run-budget-pause');
    await page.getByRole('button', { name: 'Resume' }).click();
    await ackShown(page, 'resume: applied');

    const resumed = await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'input'));
    expect(resumed.budgets.max_turns).toBe(4);
    await page.getByText('Charged 42. Which receipt format do you want?').first().waitFor();
  });

  it('shows the transcript as a conversation with the tool envelope as a card', async () => {
    const run = await createRun('transcript');
    await approveByApi(run.run_id);
    await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'input'));
    const page = await signedIn();

    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}/transcript`);
    const card = page.getByRole('region', { name: 'Result of charge' });
    await card.waitFor();
    expect(await card.textContent()).toContain('succeeded');
    await page.getByText('Please charge the customer 42 for the repair.').waitFor();
    await page.getByText('Charged 42. Which receipt format do you want?').waitFor();
    await page.getByText('Approval approved').waitFor();
    await shot(page, 'transcript', true);
  });

  it('works from the keyboard and on a phone-sized screen, and axe finds no serious violation', async () => {
    const run = await createRun('phone');
    await until(run.run_id, (r) => r.status === 'waiting');
    const page = await signedIn({ width: 390, height: 844 }, true);

    // The first Tab reaches the skip link; the timeline's events open with Enter.
    await page.keyboard.press('Tab');
    expect(
      await page.evaluate(
        () => (globalThis as unknown as BrowserDocument).document.activeElement?.textContent,
      ),
    ).toBe('Skip to content');
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    const first = page.locator('li.event summary').last();
    await first.waitFor();
    await first.focus();
    await page.keyboard.press('Enter');
    await page.locator('li.event .json pre').first().waitFor();
    await shot(page, 'run-phone', true);

    const violations = await axeViolations(page);
    expect(violations).toEqual([]);
    await page.goto(`${cs.stack.url}/console/`);
    await page.getByRole('link', { name: run.run_id }).waitFor();
    await shot(page, 'runs-phone');
    expect(await axeViolations(page)).toEqual([]);
  });
});
