/**
 * The console's live updates and its words, in a real browser (Debian's chromium) against the
 * local stack: the runs list follows its runs over the live WebSocket and shows a change
 * without a reload; the run page's feed hands over from the WebSocket to server-sent events and
 * then to long polls when each is refused, and still shows the run advancing; a client-driven
 * run that its client left says why it still reads "running" and when the sweeper acts; the
 * kind filter is grouped. Screenshots of the run page and the run list go to docs/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_KIND_GROUPS } from '../../console/src/model/events.ts';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import {
  buildConsole,
  CONSOLE_TOOLS_CONTEXT,
  type ConsoleStack,
  launchChromium,
  startConsoleStack,
} from '../support/console-stack.ts';

const DOCS = join(import.meta.dirname, '..', '..', 'docs');

let dir: string;
let cs: ConsoleStack;
let browser: Browser;
let client: AgentRunsClient;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-runs-console-live-'));
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

/** A page signed in through the start link; `prepare` runs before it loads (e.g. to watch its sockets). */
async function signedIn(prepare?: (page: Page) => void): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  contexts.push(context);
  const page = await context.newPage();
  prepare?.(page);
  await page.goto(cs.stack.consoleUrl ?? '');
  await page.getByRole('heading', { name: 'Runs', exact: true }).waitFor();
  return page;
}

const path = (scenario: string) => `/${scenario}/${crypto.randomUUID().slice(0, 8)}`;

async function agentRun(scenario: string): Promise<RunRecord> {
  const { run } = await client.createRun({
    subject: { workspace: 'live', path: path(scenario) },
    reducer: { function_path: AGENT_LOOP_PATH },
    input: 'Please charge the customer 42 for the repair.',
    context: { mode: 'conversation', tools: CONSOLE_TOOLS_CONTEXT },
    budgets: { max_turns: 10 },
  });
  return run;
}

async function until(runId: string, done: (run: RunRecord) => boolean): Promise<RunRecord> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = await client.getRun(runId);
    if (done(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} stuck: ${run.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The attribute `name` of every element `locator` matches. */
async function attrs(locator: Locator, name: string): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for (const el of await locator.all()) out.push(await el.getAttribute(name));
  return out;
}

/** Sets a marker a reload would lose. */
const mark = (page: Page) =>
  page.evaluate(() => {
    (globalThis as unknown as { marker: number }).marker = 1;
  });
const marked = (page: Page) => page.evaluate(() => (globalThis as unknown as { marker?: number }).marker);

describe('the console live, in chromium', { timeout: 120_000 }, () => {
  it('updates the runs list over the live WebSocket, without a reload', async () => {
    const frames: string[] = [];
    const page = await signedIn((p) =>
      p.on('websocket', (ws) => ws.on('framereceived', (f) => frames.push(String(f.payload)))),
    );
    await page.getByTestId('list-feed').getByText('updates live').waitFor();
    await mark(page);

    const run = await agentRun('list');
    await page.getByLabel('Subject prefix').fill(`live:${run.subject.path}`);
    const row = page.locator(`tr[data-run-id="${run.run_id}"]`);
    await row.waitFor({ timeout: 20_000 });
    // The run asks for its approval; once approved it runs the tool and takes its second turn.
    await row.getByText('1 approval to decide').waitFor({ timeout: 20_000 });
    await approveWhenAsked(run.run_id);
    await row
      .locator('td[data-label="Model turns"]')
      .getByText('2', { exact: true })
      .waitFor({ timeout: 20_000 });
    await row.locator('.badge-waiting').waitFor({ timeout: 20_000 });

    expect(await marked(page)).toBe(1);
    // The page heard of the run's events over its socket.
    expect(frames.some((f) => f.includes(run.run_id) && f.includes('"type":"event"'))).toBe(true);
  });

  it('falls back to server-sent events without a WebSocket, and to long polls without those', async () => {
    for (const [failing, transport] of [
      [['websocket'], 'server-sent events'],
      [['websocket', 'sse'], 'polling'],
    ] as const) {
      const page = await signedIn();
      // No WebSocket in this page; the event stream answers 503 where it is to fail too.
      await page.addInitScript(() => {
        (globalThis as unknown as { WebSocket?: unknown }).WebSocket = undefined;
      });
      if ((failing as readonly string[]).includes('sse')) {
        await page.route('**/events/stream**', (route) => route.fulfill({ status: 503, body: '{}' }));
      }
      const run = await agentRun(`fallback-${failing.length}`);
      await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'approval'));
      await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
      await page.getByTestId('feed-state').getByText(`live (${transport})`).waitFor({ timeout: 30_000 });
      await mark(page);

      // What happens now reaches the page over that transport alone.
      await approveWhenAsked(run.run_id);
      await page.getByLabel('Your answer').waitFor({ timeout: 30_000 });
      await page.locator('li.event[data-kind="tool_result"]').first().waitFor();
      expect(await marked(page)).toBe(1);
      expect(await page.getByTestId('feed-state').textContent()).toBe(`live (${transport})`);
    }
  });

  it('says why a client-driven run its client left still reads running, and when the sweeper acts', async () => {
    const { run } = await client.createRun({
      subject: { workspace: 'live', path: path('abandoned') },
      input: 'driven by my own code',
    });
    const owner = 'laptop-1';
    // A lease the client never renews: after two heartbeats (1 s each here) the page calls it left.
    const { lease } = await client.takeLease(run.run_id, { owner, ttl_ms: 60_000 });
    const page = await signedIn();
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    const note = page.getByTestId('driver-note');
    await note.waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('lease').textContent()).toBe(
      `the client ${owner}. It has not renewed its hold on the run for a while.`,
    );
    const text = (await note.textContent()) ?? '';
    expect(text).toContain(
      'still reads "running" because a client-driven run ends only when its client ends it',
    );
    // The 60 s lease still runs; then the deployment's skew allowance (30 s by default), then the
    // next pass of the local stack's sweeper, which passes every 2 seconds.
    expect(text).toMatch(
      /Its hold on the run \(its lease\) runs out in \d+ seconds\. The service checks for stalled runs every 2 seconds \(the sweeper\)\. It frees a hold once the hold is \d+ seconds past its end, to allow for clocks that differ between machines: within about \d+ seconds\./,
    );
    expect(text).toContain('The service never ends the run itself.');

    // Let go: the run waits (queued), and the page says nothing moves it until a client comes back.
    await client.releaseLease(run.run_id, { owner, epoch: lease.epoch });
    await page
      .getByTestId('driver-note')
      .getByText('The run waits for a client to take it again: nothing else moves a client-driven run')
      .waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('lease').textContent()).toBe('a client; none holds the run right now');
  });

  it('shows a server-driven run without lease words, and groups the event kinds', async () => {
    const run = await agentRun('words');
    await approveWhenAsked(run.run_id);
    await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'input'));
    const page = await signedIn();
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    await page.getByTestId('mode-note').waitFor({ timeout: 20_000 });

    const header = (await page.locator('.run-header').textContent()) ?? '';
    expect(header).not.toMatch(/Lease|epoch/);
    expect(await page.getByTestId('lease').textContent()).toBe(
      'the service: idle while the run waits for an answer to its question',
    );
    expect(await page.locator('#usage').textContent()).toMatch(/1 tool call ·/);
    const groups = await attrs(page.locator('select optgroup'), 'label');
    expect(groups).toEqual([
      'Run lifecycle',
      'Model and tools',
      'Questions and approvals',
      'Steers and controls',
      'Budgets and recovery',
    ]);
    await page.getByLabel('Kind').selectOption({ label: 'all of model and tools' });
    const kinds = await attrs(page.locator('li.event'), 'data-kind');
    expect(kinds.length).toBeGreaterThan(0);
    const group = EVENT_KIND_GROUPS.find((g) => g.label === 'Model and tools')?.kinds ?? [];
    expect(kinds.every((k) => (group as readonly (string | null)[]).includes(k))).toBe(true);
    await page.getByLabel('Kind').selectOption({ label: 'all kinds' });
    await page.screenshot({ path: join(DOCS, 'console-run-page.png') });

    // The list of this file's runs (each test made some), for the docs.
    await page.goto(`${cs.stack.url}/console/?subject=live%3A`);
    await page.getByTestId('list-feed').getByText('updates live').waitFor();
    await page.locator(`tr[data-run-id="${run.run_id}"]`).waitFor({ timeout: 20_000 });
    await page.screenshot({ path: join(DOCS, 'console-run-list.png') });
  });
});

/** Approves the run's approval through the API once it is open, quoting its digest. */
async function approveWhenAsked(runId: string): Promise<void> {
  const waiting = await until(runId, (r) => r.open_requests.some((q) => q.kind === 'approval'));
  const approval = waiting.open_requests.find((q) => q.kind === 'approval');
  if (approval?.kind !== 'approval') throw new Error('no approval');
  await client.approve(runId, approval.request_id, approval.subject.digest);
}
