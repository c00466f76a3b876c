/**
 * The console's seventh round of words, in a real browser (Debian's chromium) against the local
 * stack (docs/guides/web-console.md), from a newcomer's trial: the environment badge's hint, an
 * ended run's outcome and no "0" model turns in the list; on a run page the reducer's artifact
 * hash, the agent loop named as such, its own last plan item, the bars' legend, the transcript
 * link, a turn's tokens in and out, a reducer's answer after an approval, a wrapped result's
 * default status and the envelope's line; on the approval card where the risk comes from, the
 * digest's prefix and the reason's reach; on a client-driven run what a model call counts.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelCallsHint } from '../../console/src/model/budgets.ts';
import { EVENT_TERM_HINTS } from '../../console/src/model/event-terms.ts';
import { DEFAULT_STATUS_NOTE } from '../../console/src/model/events.ts';
import { LIST_HINTS } from '../../console/src/model/list-words.ts';
import { REASON_HINT, TOOL_SUMMARY_HINT } from '../../console/src/model/request-words.ts';
import {
  ARTIFACT_HASH_HINT,
  environmentHint,
  RESPOND_ITEM_NOTE,
  TRANSCRIPT_LINK_HINT,
} from '../../console/src/model/words.ts';
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

let dir: string;
let cs: ConsoleStack;
let browser: Browser;
let client: AgentRunsClient;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-runs-console-words7-'));
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

async function signedIn(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(cs.stack.consoleUrl ?? '');
  await page.getByRole('heading', { name: 'Runs', exact: true }).waitFor();
  return page;
}

const path = (scenario: string) => `/${scenario}/${randomUUID().slice(0, 8)}`;

async function until(runId: string, done: (run: RunRecord) => boolean): Promise<RunRecord> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = await client.getRun(runId);
    if (done(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} stuck: ${run.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("the words of a newcomer's trial, in chromium", { timeout: 120_000 }, () => {
  it('explains the approval card and the server-driven page, before and after approving', async () => {
    // Prepare: an agent-loop run that waits for the charge's approval.
    const { run } = await client.createRun({
      subject: { workspace: 'words7', path: path('server') },
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'Please charge the customer 42 for the repair.',
      context: { mode: 'conversation', tools: CONSOLE_TOOLS_CONTEXT },
      budgets: { max_turns: 10, max_consecutive_op_failures: 3 },
    });
    await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'approval'));
    const page = await signedIn();

    // Act: open the run while the approval is open.
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    await page.getByTestId('reason-hint').waitFor({ timeout: 20_000 });

    // Assess: the header's badge, the reducer's words, the section link, the legend.
    expect(await page.getByTestId('env-tag').getAttribute('title')).toBe(environmentHint('local'));
    expect(await page.getByTestId('reducer-gloss').textContent()).toBe(
      '(the code that decides each next step of the run: the built-in agent loop)',
    );
    expect(await page.getByTestId('artifact-hash-label').getAttribute('title')).toBe(ARTIFACT_HASH_HINT);
    const transcript = page.getByTestId('transcript-link');
    expect(await transcript.textContent()).toBe('Transcript ↗');
    expect(await transcript.getAttribute('title')).toBe(TRANSCRIPT_LINK_HINT);
    expect(await page.getByTestId('tone-legend').textContent()).toContain('Bar colours:');
    expect(await page.locator('#plan li[data-key="respond"]').getByTestId('plan-note').textContent()).toBe(
      ` · ${RESPOND_ITEM_NOTE}`,
    );
    // The approval card: the reason goes with either button, the risk's source, the digest's prefix.
    expect(await page.getByTestId('reason-hint').textContent()).toBe(REASON_HINT);
    const summary = page.locator('article.request h3 span');
    expect(await summary.textContent()).toMatch(/^Call charge 1\.0\.0 \(mutating, risk high/);
    expect(await summary.getAttribute('title')).toBe(TOOL_SUMMARY_HINT);
    await page.locator('article.request').getByRole('button', { name: 'show full' }).click();
    expect(await page.getByTestId('approval-digest-alg').textContent()).toMatch(
      /^sha256:rfc8785: the SHA-256 of the request's canonical JSON \(RFC 8785/,
    );
    // A model turn's row splits its tokens as the usage line does.
    const turn = page.locator('li.event[data-kind="model_turn_completed"] .desc').first();
    expect(await turn.textContent()).toMatch(/ · \d+ in \/ \d+ out tokens?$/);
    expect(await page.getByTestId('usage-line').textContent()).toMatch(/\d+ in \/ \d+ out tokens?$/);

    // Act: approve, and let the run go on to its question.
    const waiting = await client.getRun(run.run_id);
    const approval = waiting.open_requests.find((q) => q.kind === 'approval');
    if (approval?.kind !== 'approval') throw new Error('no approval');
    await client.approve(run.run_id, approval.request_id, approval.subject.digest);
    await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'input'));
    const { events } = await client.listRunEvents(run.run_id, { after: 0, limit: 200 });
    const resolved = events.find((e) => e.kind === 'request_resolved');
    const answer = events.find((e) => e.kind === 'reducer_answered' && e.data.event_seq === resolved?.seq);
    expect(resolved).toBeDefined();
    expect(answer?.data.effects).toEqual([]);
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);

    // Assess: the answer to the approval says the held call goes on; charge's bare answer is wrapped.
    const answerRow = page.locator(`#event-${answer?.seq}`);
    await answerRow.waitFor({ timeout: 20_000 });
    expect(await answerRow.locator('.desc').textContent()).toBe(
      `it read event #${resolved?.seq} and asks for nothing new: the call the approval held back, asked for earlier, now goes on`,
    );
    const result = page.locator('li.event[data-kind="tool_result"]').first();
    expect(await result.locator('.desc').textContent()).toBe(`charge: succeeded ${DEFAULT_STATUS_NOTE}`);
    await result.locator('summary').click();
    expect(await result.getByTestId('term-hints').textContent()).toContain(EVENT_TERM_HINTS.envelope);
  });

  it("shows an ended run's outcome and no 0 turns in the list, and a client's model calls", async () => {
    // Prepare: a client-driven run with one reported turn, then completed.
    const { run } = await client.createRun({
      subject: { workspace: 'words7', path: path('client') },
      input: 'add 2 and 3',
    });
    const owner = 'my-loop-7';
    const { lease } = await client.takeLease(run.run_id, { owner });
    const fence = { owner, epoch: lease.epoch };
    const begun = await client.beginOperation(run.run_id, { fence, kind: 'model_turn' });
    await client.reportOperationOutcome(run.run_id, {
      fence,
      op_id: begun.operation?.op_id ?? '',
      result: {
        kind: 'model_turn_completed',
        message: { text: '5' },
        usage: { input_tokens: 12, output_tokens: 3 },
      },
    });
    await client.completeRun(run.run_id, fence, { summary: 'done' });
    // And one that never reached the model, completed too.
    const { run: bare } = await client.createRun({
      subject: { workspace: 'words7', path: path('client-bare') },
      input: 'nothing to ask',
    });
    const held = await client.takeLease(bare.run_id, { owner });
    await client.completeRun(bare.run_id, { owner, epoch: held.lease.epoch }, { summary: 'done' });
    await until(bare.run_id, (r) => r.status === 'completed');
    const page = await signedIn();

    // Act: the list, filtered to these runs.
    await page.getByLabel('Subject prefix').fill('words7:/client');
    await page.locator(`tr[data-run-id="${run.run_id}"]`).waitFor({ timeout: 20_000 });
    const row = page.locator(`tr[data-run-id="${bare.run_id}"]`);
    await row.getByTestId('status-outcome').waitFor({ timeout: 20_000 });

    // Assess: how it ended beside its status; an empty turns cell that says why.
    expect(await row.getByTestId('status-outcome').textContent()).toBe(' · succeeded');
    const turns = row.locator('td[data-label="Model turns"]');
    expect(await turns.textContent()).toBe('');
    expect(await turns.getAttribute('title')).toBe(LIST_HINTS.turn);
    const turned = page.locator(`tr[data-run-id="${run.run_id}"] td[data-label="Model turns"]`);
    expect(await turned.textContent()).toBe('1');

    // The client-driven run's page: a model call is a reported turn.
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    const calls = page.getByTestId('usage-line').locator('span').first();
    await calls.waitFor({ timeout: 20_000 });
    expect(await calls.textContent()).toBe('1 model call');
    expect(await calls.getAttribute('title')).toBe(modelCallsHint(false));
  });
});
