/**
 * The console's words for a newcomer, in a real browser (Debian's chromium) against the local
 * stack (docs/guides/web-console.md): the runs list's filter hints, column titles, "Needs you" and count
 * line; the run page's reducer version, "Driven by", model turns and events, the seq hint, the
 * line per event kind, the usage labels, the on_exceeded sentence and the run's US-dollar cost
 * (the API's usage.cost); the transcript without the wrapped-result badge on a plain answer; a
 * client-driven run's plan text and a turn reported as a turn outcome. Second round: what the
 * approval digest covers, what a waiting run waits for, the Principal hint and no empty Agent fact,
 * an effect id read out, the tool card's own operation and a finish reason in plain words. Third
 * round: what the approval is for and why, what usage counts, one time style, the run id on one
 * line, a client-driven run's current operation and hold, a run waiting for its client (page
 * and list) and a stop by a person.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, MODEL_CALLS_HINT } from '../../console/src/model/budgets.ts';
import { EVENT_KIND_HINTS, EVENT_KIND_WORDS } from '../../console/src/model/events.ts';
import { LIST_HINTS, PRINCIPAL_HINT } from '../../console/src/model/list-words.ts';
import { approvalWhy } from '../../console/src/model/request-words.ts';
import { USAGE_HINTS } from '../../console/src/model/run-words.ts';
import { shortId } from '../../console/src/model/words.ts';
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
  dir = mkdtempSync(join(tmpdir(), 'agent-runs-console-words-'));
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

describe('the console in words a newcomer reads, in chromium', { timeout: 120_000 }, () => {
  it('explains the list, the header, seq, event kinds and usage, and shows the cost', async () => {
    // Another run, so the filter below leaves one of the loaded runs out.
    await client.createRun({ subject: { workspace: 'words', path: path('other') }, input: 'x' });
    const { run } = await client.createRun({
      subject: { workspace: 'words', path: path('server') },
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'Please charge the customer 42 for the repair.',
      context: { mode: 'conversation', tools: CONSOLE_TOOLS_CONTEXT },
      budgets: { max_turns: 10, max_consecutive_op_failures: 3 },
    });
    await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'approval'));
    const page = await signedIn();

    // The list: a hint under each filter, titles on the columns, what the run needs in words.
    await page.getByLabel('Subject prefix').fill(`words:${run.subject.path}`);
    const row = page.locator(`tr[data-run-id="${run.run_id}"]`);
    await row.getByText('1 approval to decide').waitFor({ timeout: 20_000 });
    expect(await page.getByText(`Principal: ${LIST_HINTS.principal}`).count()).toBe(1);
    expect(await page.getByText(`Subject prefix: ${LIST_HINTS.subject}`).count()).toBe(1);
    expect(await page.getByRole('columnheader', { name: 'Needs you' }).getAttribute('title')).toBe(
      LIST_HINTS.needsYou,
    );
    expect(await page.getByTestId('list-count').textContent()).toMatch(
      /^1 run matches the filters, of [2-9]\d* loaded/,
    );

    // The run page while the approval is open: what it waits for, what the digest covers.
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    await page.getByTestId('digest-hint').waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('digest-hint').textContent()).toContain(
      'the exact call: the tool, its version and its arguments',
    );
    expect(await page.getByTestId('lease').textContent()).toBe(
      'the service: idle while the run waits for an approval',
    );
    // No client, no word of one on a server-driven run.
    expect(await page.getByTestId('client-heard').count()).toBe(0);
    expect(await page.getByTestId('approval-why').textContent()).toBe(approvalWhy('tool_call'));
    expect(await page.getByText('a tool call', { exact: true }).count()).toBe(1);
    expect(await page.getByTestId('digest-hint').textContent()).toContain('the approval is refused');
    expect(await page.getByTestId('digest-hint').textContent()).not.toContain('rfc8785');
    expect(await page.getByText('Principal', { exact: true }).getAttribute('title')).toBe(
      `${PRINCIPAL_HINT}.`,
    );
    // A user's own run acts as nobody else: no Agent fact.
    expect(await page.getByText('Agent', { exact: true }).count()).toBe(0);

    // Let the run finish its turns: the approval, the tool, the question.
    const waiting = await client.getRun(run.run_id);
    const approval = waiting.open_requests.find((q) => q.kind === 'approval');
    if (approval?.kind !== 'approval') throw new Error('no approval');
    await client.approve(run.run_id, approval.request_id, approval.subject.digest);
    const asking = await until(run.run_id, (r) => r.open_requests.some((q) => q.kind === 'input'));

    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    const reducer = page.getByTestId('reducer');
    await reducer.waitFor({ timeout: 20_000 });
    expect(await reducer.textContent()).toMatch(
      /· artifact hash [0-9a-f]{12}… show full \(its code's SHA-256, pinned when the run started\)/,
    );
    expect(await page.getByTestId('lease').textContent()).toBe(
      'the service: idle while the run waits for an answer to its question',
    );
    expect(await page.getByText('Driven by', { exact: true }).getAttribute('title')).toContain(
      'server-driven',
    );
    await page.getByTestId('turns').getByText(String(asking.turn), { exact: true }).waitFor();
    expect(await page.getByTestId('seq-hint').textContent()).toContain("an event's number in the run's log");

    // Usage: the cost the API computes, plain limit names, what happens at a limit.
    const cost = asking.usage.cost;
    expect(cost).toBeDefined();
    const costText = (await page.getByTestId('cost').textContent()) ?? '';
    expect(costText).toContain(`Cost: ${formatUsd(cost?.total_usd ?? -1)}`);
    expect(costText).toContain(`prices of ${cost?.prices_as_of}`);
    expect(costText).toContain(`, ${USAGE_HINTS.aws};`);
    // The header says the run waits for the person's answer, beside its status.
    expect(await page.getByTestId('waits-for').textContent()).toBe('waits for your answer');
    expect(await page.locator('#usage').textContent()).toContain('failed operations in a row');
    // What the usage counts count: operations once they end, calls a lost holder may have made.
    expect(await page.locator('#usage').getByText('operations ended').getAttribute('title')).toContain(
      'One still in flight is counted when it ends;',
    );
    expect(await page.getByTestId('usage-line').locator('span').first().getAttribute('title')).toBe(
      MODEL_CALLS_HINT,
    );
    // One time style: 24-hour date and time, how long ago beside it.
    expect(await page.getByTestId('created').textContent()).toMatch(
      /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \((just now|\d+ (s|min|\.\d h) ago)\)$/,
    );
    expect(await page.getByTestId('on-exceeded').textContent()).toContain(
      'If a limit below is reached, the run pauses before its next step',
    );

    // One kind chosen: its line under the filter, and the reducer's answer read as a decision.
    await page.getByLabel('Kind').selectOption({ label: 'reducer answered' });
    expect(await page.getByTestId('kind-hint').textContent()).toBe(EVENT_KIND_HINTS.reducer_answered);
    const answered = page.locator('li.event[data-kind="reducer_answered"]').first();
    expect(await answered.locator('.desc').textContent()).toMatch(/^it read event #\d+ and /);
    expect(await answered.locator('.what').getAttribute('title')).toBe(EVENT_KIND_HINTS.reducer_answered);
    expect(await answered.locator('.what').textContent()).toBe(EVENT_KIND_WORDS.reducer_answered);
    expect(await answered.locator('.kind.tag').textContent()).toBe('reducer_answered');

    // An expanded tool result: its effect id read out, a line per term of its raw JSON.
    await page.getByLabel('Kind').selectOption({ label: 'tool result' });
    const result = page.locator('li.event[data-kind="tool_result"]').first();
    await result.locator('summary').click();
    expect(await result.getByTestId('event-ids').textContent()).toMatch(
      /effect \d+:0 \(the 1st thing the reducer asked for at state revision \d+\)/,
    );

    // The transcript: charge answered a plain value, so its card carries no wrapped-result badge.
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}/transcript`);
    const card = page.getByRole('region', { name: 'Result of charge' });
    await card.waitFor();
    expect(await card.textContent()).not.toMatch(/legacy|unchecked/);
    // The card names the operation that ran the tool, which is not the model turn's that asked.
    const toolOp = (await card.getByTestId('tool-op').textContent()) ?? '';
    const turnOp = `${run.run_id}/op/1`;
    expect(toolOp).toMatch(/^ operation run_\w{6}…\/op\/\d+$/);
    expect(await card.getByTestId('tool-op').getAttribute('title')).not.toContain(`${turnOp}`);
    // The model's id for the call is folded under a plain label, second to the operation.
    const callId = card.getByTestId('tool-call-id');
    expect(await callId.locator('summary').textContent()).toBe("the model's id for this call");
    expect(await callId.getAttribute('open')).toBeNull();
    expect(await page.getByText('· asked for tools').count()).toBeGreaterThan(0);
  });

  it('says a client-driven run has no reducer plan, and shows what a turn outcome reported', async () => {
    const { run } = await client.createRun({
      subject: { workspace: 'words', path: path('client') },
      input: 'driven by my own code',
    });
    const owner = 'runtime-1';
    const { lease } = await client.takeLease(run.run_id, { owner });
    const fence = { owner, epoch: lease.epoch };
    const begun = await client.beginOperation(run.run_id, { fence, kind: 'model_turn' });
    const opId = begun.operation?.op_id;
    if (opId === undefined) throw new Error('no operation');
    await client.reportOperationOutcome(run.run_id, {
      fence,
      op_id: opId,
      turn_outcome: {
        schema: 'agent.external-runtime.turn-outcome.v1',
        'outcome/ref': `outcome-${randomUUID()}`,
        'turn/ref': opId,
        'binding/ref': run.run_id,
        'agent/id': 'agents/words',
        status: 'completed',
        'reason/code': 'completed',
        retryability: 'terminal',
        'product/ref': 'answer-1',
        'product/digest': 'sha256:abc',
        'budget/reserved': {},
        'budget/charged': { input_tokens: 20, output_tokens: 5 },
        'usage/fidelity': 'host-measured',
        'selected/at': '2026-12-03T10:00:00Z',
        'selected/by': 'my-runtime',
      },
    });
    const page = await signedIn();
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    await page.getByText("No plan: this run is moved by its client's own code").waitFor({ timeout: 20_000 });
    expect(await page.locator('#plan').textContent()).not.toContain('reducer has not');
    expect(await page.getByTestId('reducer').textContent()).toBe('none: the client drives this run');

    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}/transcript`);
    const outcome = page.getByTestId('turn-outcome');
    await outcome.waitFor({ timeout: 20_000 });
    expect(await outcome.textContent()).toBe(
      "The client's own runtime ran this turn and reported its outcome: completed: completed, product answer-1; tokens as the host measured them; decided by my-runtime.",
    );
    expect(await page.getByText('Model (run by the client)').count()).toBe(1);
  });

  it("shows a client's operation and hold, a run waiting for its client, and a stop by a person", async () => {
    const { run } = await client.createRun({
      subject: { workspace: 'words', path: path('client-op') },
      input: 'driven by my loop',
    });
    const owner = 'my-loop';
    const { lease } = await client.takeLease(run.run_id, { owner });
    const begun = await client.beginOperation(run.run_id, {
      fence: { owner, epoch: lease.epoch },
      kind: 'model_turn',
    });
    const opId = begun.operation?.op_id ?? '';
    const page = await signedIn();
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    const op = page.getByTestId('operation');
    await op.waitFor({ timeout: 20_000 });
    // The operation in flight, as the CLI's `operation … (in flight)`, its id short.
    expect(await op.textContent()).toBe(`model turn ${shortId(opId)} (in flight)`);
    expect(await page.getByTestId('lease').textContent()).toMatch(
      /^the client my-loop\. It must renew its hold on the run \(its lease\) while it works; unless renewed, the hold runs out in \d+ seconds?\.$/,
    );
    // When the run last heard from its client, and what happens if the client does not come back.
    expect(await page.getByTestId('client-heard').textContent()).toMatch(
      /^Last heard from its client (just now|\d+ seconds? ago) \(its last write to the run\)\. If the client does not come back by \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}, its hold on the run ends: the runtime then lets go of the run and the run waits for a client to take it again\.$/,
    );
    // The ended-operations count does not count the one in flight, and says so.
    expect(await page.locator('#usage').textContent()).toContain('operations ended 0');
    // The run id stays on one line at 1400 px: its box is no taller than a one-line fact's.
    const idBox = await page.getByTestId('run-id').boundingBox();
    const principalBox = await page
      .getByText(/^user:/)
      .first()
      .boundingBox();
    expect(idBox?.height).toBeLessThanOrEqual((principalBox?.height ?? 0) + 1);

    // A client-driven run nobody holds waits for its client: said once on its page (the driver's
    // note), and in the list by its status, not under Needs you.
    const { run: idle } = await client.createRun({
      subject: { workspace: 'words', path: path('client-idle') },
      input: 'waiting for my loop',
    });
    await page.goto(`${cs.stack.url}/console/runs/${idle.run_id}`);
    await page
      .getByText('The run waits for a client to take it again: nothing else moves a client-driven run')
      .waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('status-detail').count()).toBe(0);
    await page.goto(`${cs.stack.url}/console/`);
    await page.getByLabel('Subject prefix').fill(`words:${idle.subject.path}`);
    const row = page.locator(`tr[data-run-id="${idle.run_id}"]`);
    await row.getByTestId('status-note').getByText('waits for its client').waitFor({ timeout: 20_000 });
    expect(await row.locator('td[data-label="Needs you"]').textContent()).toBe('');

    // A stop without a reason reads as a person's in the log.
    await client.stop(idle.run_id);
    await until(idle.run_id, (r) => r.status === 'stopped');
    await page.goto(`${cs.stack.url}/console/runs/${idle.run_id}`);
    await page
      .locator('li.event[data-kind="stopped"] .desc')
      .getByText('stopped by a person (a stop control)')
      .waitFor({ timeout: 20_000 });
  });

  it('says a client-driven run waits for your answer, in minutes, and nothing open once ended', async () => {
    const { run } = await client.createRun({
      subject: { workspace: 'words', path: path('client-ask/deep/nested-subject-path') },
      input: 'my loop asks',
    });
    const owner = 'my-loop-q';
    const { lease } = await client.takeLease(run.run_id, { owner, ttl_ms: 15 * 60_000 });
    const fence = { owner, epoch: lease.epoch };
    await client.openRequest(run.run_id, fence, { kind: 'input', question: 'Which account?' });
    const page = await signedIn();
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    const waits = page.getByTestId('waits-for');
    await waits.waitFor({ timeout: 20_000 });
    expect(await waits.textContent()).toBe('waits for your answer');
    expect(await page.getByTestId('lease').textContent()).toMatch(
      /^the client my-loop-q\. It must renew its hold on the run \(its lease\) while it works; unless renewed, the hold runs out in 1[45] min\.$/,
    );
    await page.screenshot({ path: '/tmp/words4-client-ask.png', fullPage: true });

    // The runs list at 800 px: the page does not overflow, the columns have their hints.
    await page.setViewportSize({ width: 800, height: 900 });
    await page.goto(`${cs.stack.url}/console/`);
    await page.getByLabel('Subject prefix').fill(`words:${run.subject.path}`);
    await page.locator(`tr[data-run-id="${run.run_id}"]`).waitFor({ timeout: 20_000 });
    const overflow = await page.evaluate<number>(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    expect(overflow).toBeLessThanOrEqual(0);
    expect(await page.getByRole('columnheader', { name: 'Status' }).getAttribute('title')).toBe(
      LIST_HINTS.status,
    );

    // Answered and completed: no "Needs you" card, nobody drives it, no checkpoints ever.
    const asked = await client.getRun(run.run_id);
    const request = asked.open_requests[0];
    if (request === undefined) throw new Error('no request');
    await client.answer(run.run_id, request.request_id, 'acme');
    await client.completeRun(run.run_id, fence, { summary: 'done' });
    await until(run.run_id, (r) => r.status === 'completed');
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${cs.stack.url}/console/runs/${run.run_id}`);
    await page.locator('#checkpoints').getByText('None.', { exact: true }).waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('lease').textContent()).toBe('nobody: the run has ended');
    expect(await page.getByRole('heading', { name: 'Needs you' }).count()).toBe(0);
    expect(await page.getByTestId('waits-for').count()).toBe(0);
  });
});
