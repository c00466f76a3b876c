/**
 * First paint of a run page with 1,000 events, on the local stack, in Debian's chromium.
 * Run: `npx node bench/console.bench.ts [events] [loads] [--record]` (defaults 1000, 7). Issue 17,
 * "Accessible and fast"; issue 27 point 5 (targets: p90 under 700 ms, at most 400 KiB moved per
 * cold load).
 *
 * Builds the console from console/, starts the local stack serving it, and drives one task run
 * of the default agent reducer with a model that calls `echo` with a new argument each turn
 * (instant tools) until the log holds `events` events, then stops it. Then opens the run's page
 * `loads` times, each in a fresh browser context (no HTTP cache, a signed-in session), and
 * measures, from the navigation's start: first contentful paint (the shell), and the frame in
 * which the page shows the run's header and the newest rows of its timeline, the newest event
 * among them (what "first paint of the run" means here: the page reads the newest
 * TIMELINE_WINDOW events first, draws ROWS_STEP rows, and reads and draws older ones as the
 * timeline is scrolled). Bytes moved are the transfer sizes of the navigation and every
 * resource up to that frame (the bundle, config, the run and its first page of events). Also the renderer's main-thread CPU time (Chrome's
 * Performance metrics), which a busy machine inflates less than wall time. The floor it is compared with is the API's own time for the two reads the page needs
 * (`GET /runs/{id}` and `GET /runs/{id}/events?after=..&limit=1000`), measured from Node.
 * Prints a table and writes reports/bench-console.json; `--record` also writes
 * bench/results/console.json (keeping the one it replaces in bench/results/history/).
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TIMELINE_WINDOW } from '../console/src/model/paging.ts';
import { createClient } from '../lib/client/client.ts';
import { ApiError } from '../lib/client/errors.ts';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../lib/contracts/index.ts';
import { SILENT_LOG } from '../lib/handlers/observability.ts';
import { registerSampleTools } from '../lib/local/sample-tools.ts';
import { startLocalStack } from '../lib/local/stack.ts';
import { AGENT_LOOP_PATH } from '../lib/reducers/index.ts';
import { buildConsole, launchChromium } from '../test/support/console-stack.ts';

const RECORD = process.argv.includes('--record');
const positional = process.argv.slice(2).filter((a) => a !== '--record');
const EVENTS = Number(positional[0] ?? 1000);
const LOADS = Number(positional[1] ?? 7);
const TARGET_MS = 700;
const TARGET_KIB = 400;

/** The browser globals the page function reads (this file is type-checked for Node). */
interface BrowserGlobals {
  document: { querySelector(selector: string): { textContent: string | null } | null };
  performance: {
    now(): number;
    getEntriesByName(name: string): { startTime: number }[];
    getEntriesByType(type: string): { name: string; transferSize?: number }[];
  };
  requestAnimationFrame(callback: () => void): number;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};

const dir = mkdtempSync(join(tmpdir(), 'agent-runs-console-bench-'));
const buildStarted = performance.now();
await buildConsole(dir);
const buildMs = performance.now() - buildStarted;

let turn = 0;
const stack = await startLocalStack({
  port: 0,
  stateDir: false,
  logger: SILENT_LOG,
  consoleDir: dir,
  sandboxLimits: { timeoutMs: 5_000 },
  registerTools: registerSampleTools,
  modelFunctions: {
    [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
      turn += 1;
      return {
        message: { text: `Step ${turn}: checking the next record.` },
        tool_calls: [{ call_id: `call-${turn}`, name: 'echo', args: { record: turn, note: 'x'.repeat(80) } }],
        finish_reason: 'tool_calls',
        usage: { input_tokens: 120, output_tokens: 30 },
      };
    },
  },
});
const browser = await launchChromium();
try {
  const client = createClient({ baseUrl: stack.url, token: stack.token });
  const fillStarted = performance.now();
  const { run } = await client.createRun({
    subject: { workspace: 'bench', path: `/console/${crypto.randomUUID().slice(0, 8)}` },
    reducer: { function_path: AGENT_LOOP_PATH },
    input: 'Check every record.',
    context: {
      mode: 'task',
      tools: [{ name: 'echo', schema: { type: 'object' }, mutating: false }],
    },
  });
  for (;;) {
    const current = await client.getRun(run.run_id);
    if (current.last_seq >= EVENTS) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  // A busy run may answer 503 store_unavailable: the same control_id makes the retry safe.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await client.stop(run.run_id, {
        reason: 'benchmark log is long enough',
        control_id: `bench-stop-${run.run_id}`,
      });
      break;
    } catch (err) {
      if (attempt >= 20 || !(err instanceof ApiError) || !err.retryable) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  for (;;) {
    const page = await client.events(run.run_id, { after: 0, limit: 1 });
    if (page.settled === true) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const lastSeq = (await client.getRun(run.run_id)).last_seq;
  const fillMs = performance.now() - fillStarted;
  const shown = Math.min(lastSeq, TIMELINE_WINDOW);

  // The floor: the page's two reads, from Node, on the same stack.
  const floor: number[] = [];
  for (let i = 0; i < LOADS; i += 1) {
    const t = performance.now();
    await client.getRun(run.run_id);
    await client.events(run.run_id, {
      after: Math.max(0, lastSeq - TIMELINE_WINDOW),
      limit: TIMELINE_WINDOW,
    });
    floor.push(performance.now() - t);
  }

  const url = `${stack.url}/console/runs/${run.run_id}`;
  const samples: {
    fcp: number;
    events: number;
    transferKb: number;
    loaded: number;
    parts: { name: string; kib: number }[];
    cpu: { task: number; script: number; layout: number };
  }[] = [];
  for (let i = 0; i < LOADS + 1; i += 1) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(
      ([token]) =>
        localStorage.setItem('agent-runs.console.session', JSON.stringify({ token, via: 'token' })),
      [stack.token],
    );
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
    await page.goto(url, { waitUntil: 'commit' });
    const result = await page.evaluate(async (newest) => {
      const { document, performance, requestAnimationFrame } = globalThis as unknown as BrowserGlobals;
      // Painted: the header and the newest rows of the timeline, the newest event among them.
      while (
        document.querySelector('#run-title') === null ||
        document.querySelector(`li.event[id="event-${newest}"]`) === null
      ) {
        await new Promise((r) => setTimeout(r, 5));
      }
      // The frame after the rows are in the DOM is the one that paints them.
      await new Promise((r) => requestAnimationFrame(() => r(null)));
      const at = performance.now();
      const fcp = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN;
      const entries = performance
        .getEntriesByType('resource')
        .concat(performance.getEntriesByType('navigation'));
      const bytes = entries.reduce((sum, e) => sum + (e.transferSize ?? 0), 0);
      const parts = entries.map((e) => ({
        name: e.name.replace(/^https?:\/\/[^/]+/, '').replace(/run_[0-9a-f]+/, '{id}'),
        kib: Math.round((e.transferSize ?? 0) / 102.4) / 10,
      }));
      const loaded = document.querySelector('[data-testid="events-loaded"]')?.textContent ?? '';
      return { fcp, events: at, transferKb: bytes / 1024, loaded: Number.parseInt(loaded, 10), parts };
    }, lastSeq);
    const { metrics } = (await cdp.send('Performance.getMetrics')) as {
      metrics: { name: string; value: number }[];
    };
    const metric = (name: string) => (metrics.find((m) => m.name === name)?.value ?? Number.NaN) * 1000;
    const cpu = {
      task: metric('TaskDuration'),
      script: metric('ScriptDuration'),
      layout: metric('LayoutDuration') + metric('RecalcStyleDuration'),
    };
    if (i > 0) samples.push({ ...result, cpu }); // the first load warms the stack's caches
    await context.close();
  }

  const eventsP50 = pct(
    samples.map((s) => s.events),
    50,
  );
  const eventsP90 = pct(
    samples.map((s) => s.events),
    90,
  );
  const transferKib = Math.max(...samples.map((s) => s.transferKb));
  const report = {
    measured_at: new Date().toISOString(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
    cpus: cpus().length,
    events_in_log: lastSeq,
    events_shown: shown,
    loads: samples.length,
    build_ms: Math.round(buildMs),
    fill_ms: Math.round(fillMs),
    first_contentful_paint_ms: {
      p50: pct(
        samples.map((s) => s.fcp),
        50,
      ),
      max: Math.max(...samples.map((s) => s.fcp)),
    },
    run_painted_ms: {
      p50: eventsP50,
      p90: pct(
        samples.map((s) => s.events),
        90,
      ),
      max: Math.max(...samples.map((s) => s.events)),
    },
    api_floor_ms: { p50: pct(floor, 50), max: Math.max(...floor) },
    main_thread_cpu_ms: {
      task_p50: pct(
        samples.map((s) => s.cpu.task),
        50,
      ),
      script_p50: pct(
        samples.map((s) => s.cpu.script),
        50,
      ),
      style_layout_p50: pct(
        samples.map((s) => s.cpu.layout),
        50,
      ),
    },
    load_average: loadavg(),
    transfer_kb: Math.round(transferKib),
    events_loaded_at_paint: samples[0]?.loaded ?? 0,
    transfer_parts_kib: samples[0]?.parts ?? [],
    target_ms: TARGET_MS,
    target_kib: TARGET_KIB,
    within_target: eventsP90 < TARGET_MS && transferKib <= TARGET_KIB,
  };
  const round = (x: number) => Math.round(x);
  console.log(
    `console first paint, run with ${lastSeq} events (${shown} shown), ${samples.length} cold loads`,
  );
  console.log(`  console build                 ${round(buildMs)} ms; log filled in ${round(fillMs)} ms`);
  console.log(`  first contentful paint  p50   ${round(report.first_contentful_paint_ms.p50)} ms`);
  console.log(
    `  run painted (newest rows) p50 ${round(eventsP50)} ms  p90 ${round(eventsP90)} ms  max ${round(report.run_painted_ms.max)} ms  (target p90 < ${TARGET_MS} ms)`,
  );
  console.log(
    `  floor: the API's two reads    p50 ${round(report.api_floor_ms.p50)} ms  max ${round(report.api_floor_ms.max)} ms`,
  );
  console.log(
    `  renderer main-thread CPU p50  ${round(report.main_thread_cpu_ms.task_p50)} ms (script ${round(report.main_thread_cpu_ms.script_p50)}, style+layout ${round(report.main_thread_cpu_ms.style_layout_p50)})`,
  );
  console.log(
    `  transferred per load (max)    ${report.transfer_kb} KiB (target <= ${TARGET_KIB}); ${report.events_loaded_at_paint} events loaded at paint; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  for (const part of report.transfer_parts_kib) console.log(`    ${part.kib} KiB  ${part.name}`);
  mkdirSync('reports', { recursive: true });
  writeFileSync('reports/bench-console.json', `${JSON.stringify(report, null, 2)}\n`);
  if (RECORD) recordResult(report);
} finally {
  await browser.close();
  await stack.stop();
  rmSync(dir, { recursive: true, force: true });
}

/**
 * `--record`: the report becomes bench/results/console.json, the one it replaces kept as
 * bench/results/history/console-{its date}.json (so a new record never loses the one it is
 * compared against).
 */
function recordResult(report: { measured_at: string }): void {
  const path = 'bench/results/console.json';
  mkdirSync('bench/results/history', { recursive: true });
  if (existsSync(path)) {
    const previous = JSON.parse(readFileSync(path, 'utf8')) as { measured_at?: string };
    const stamp = (previous.measured_at ?? 'undated').slice(0, 16).replace(':', '');
    copyFileSync(path, `bench/results/history/console-${stamp}.json`);
  }
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  execFileSync(join('node_modules', '.bin', 'biome'), ['format', '--write', path], { stdio: 'ignore' });
  console.log(`recorded ${path}`);
}
