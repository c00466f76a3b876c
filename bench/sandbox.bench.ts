/**
 * Per-call cost of the deterministic reducer sandbox against the same reducer run directly in
 * Node. Run: `npx node bench/sandbox.bench.ts [calls] [agent-loop artifact]` (default 2000 calls
 * per series, after 200 warm-up calls; default artifact lib/reducers/agent-loop.js). The main
 * subject is test/fixtures/reducers/agent-like.js, fed the five requests of a whole agent run in
 * rotation. Series:
 * - `sandbox`: ReducerHost.reduce, the full path (registry get, sha256 check, canonical JSON,
 *   fresh QuickJS runtime + context, prelude, module evaluation, call, JSON back);
 * - `direct`: the same module imported and called in-process;
 * - `js tally`, `wasm`, `starlark`: ReducerHost.reduce on the conformance reducer in each
 *   language (tally.js in QuickJS; tally.wat, a worker-thread round trip; tally.star, a
 *   worker-thread round trip into the loaded Go runtime, a fresh Starlark thread per call), fed
 *   the seven conformance requests in rotation: the warm cost of a call;
 * - `starlark new artifact`: the first call of an artifact the Starlark worker has not loaded
 *   (a spare Go runtime takes it: load, then call), 20 artifacts;
 * - `starlark fresh host`: the first call on a new host (worker start, Go runtime start, load,
 *   call; the compiled module is cached per process), 5 hosts; `starlark first in process`
 *   adds compiling the 5.5 MB module;
 * - `agent`: ReducerHost.reduce on the default agent loop artifact (the one the runtime ships),
 *   fed the five-event run with a two-tool context; its size in bytes is printed too.
 * Prints p50/p99 per call in ms, the sandbox/direct ratio, then one JSON line. Target: sandbox
 * p50 ≤ 2 ms (agent-like.js; the agent artifact is reported against the same floor).
 */
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import type { ReducerRequest } from '../lib/contracts/index.ts';
import {
  createSandboxReducerHost,
  InMemoryFunctionRegistry,
  type SandboxReducerHost,
} from '../lib/sandbox/index.ts';
import { reduce } from '../test/fixtures/reducers/agent-like.js';
import { compileWatFixture } from '../test/fixtures/reducers/compile-wat.ts';
import {
  AGENT_LOOP_CONTEXT,
  driveAgentRun,
  driveEvents,
  TALLY_EVENTS,
} from '../test/fixtures/reducers/requests.ts';

const CALLS = Number(process.argv[2] ?? 2000);
const AGENT_ARTIFACT = process.argv[3]
  ? pathToFileURL(process.argv[3])
  : new URL('../lib/reducers/agent-loop.js', import.meta.url);
const WARMUP = 200;
const TARGET_P50_MS = 2;

interface Series {
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
}

function summarize(samples: number[]): Series {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))] ?? Number.NaN;
  const mean = samples.reduce((sum, x) => sum + x, 0) / samples.length;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return { p50_ms: round(at(0.5)), p99_ms: round(at(0.99)), mean_ms: round(mean) };
}

async function measure(
  requests: ReducerRequest[],
  call: (request: ReducerRequest) => unknown,
): Promise<Series> {
  const pick = (i: number) => requests[i % requests.length] as ReducerRequest;
  for (let i = 0; i < WARMUP; i++) await call(pick(i));
  const samples: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const request = pick(i);
    const started = performance.now();
    await call(request);
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}

function answeredOrThrow(result: { kind: string }): void {
  if (result.kind !== 'answered') throw new Error(`the sandbox did not answer: ${JSON.stringify(result)}`);
}

/** Times one call on `host` (ms); throws unless it answered. */
async function timedCall(host: SandboxReducerHost, function_path: string, request: unknown): Promise<number> {
  const started = performance.now();
  answeredOrThrow(await host.reduce({ function_path }, request));
  return performance.now() - started;
}

const fixture = (name: string) => readFile(new URL(`../test/fixtures/reducers/${name}`, import.meta.url));
const source = await fixture('agent-like.js');
const wasm = await compileWatFixture('tally.wat');
const starlark = await fixture('tally.star');
const agentSource = await readFile(AGENT_ARTIFACT);
const registry = new InMemoryFunctionRegistry([
  { function_path: '/lib/bench/agent-like', kind: 'js', bytes: source },
  { function_path: '/lib/bench/tally-js', kind: 'js', bytes: await fixture('tally.js') },
  { function_path: '/lib/bench/tally', kind: 'wasm', bytes: wasm },
  { function_path: '/lib/bench/tally-star', kind: 'star', bytes: starlark },
  { function_path: '/lib/bench/agent-loop', kind: 'js', bytes: agentSource },
]);

// Cold Starlark first, before anything else warmed the process: compile + worker + runtime + load + call.
const firstHost = createSandboxReducerHost({ registry });
const tally = await driveEvents(
  async (request) => {
    const result = await firstHost.reduce({ function_path: '/lib/bench/tally-js' }, request);
    answeredOrThrow(result);
    return (result as { response: unknown }).response;
  },
  TALLY_EVENTS.map(({ event }) => event),
);
const firstInProcessMs = await timedCall(firstHost, '/lib/bench/tally-star', tally.requests[0]);
await firstHost.close();
const freshHostMs: number[] = [];
for (let i = 0; i < 5; i++) {
  const fresh = createSandboxReducerHost({ registry });
  freshHostMs.push(await timedCall(fresh, '/lib/bench/tally-star', tally.requests[0]));
  await fresh.close();
}

const host = createSandboxReducerHost({ registry });
const { requests } = await driveAgentRun((request) => reduce(request));
const agentRun = await driveAgentRun(
  async (request) => {
    const result = await host.reduce({ function_path: '/lib/bench/agent-loop' }, request);
    answeredOrThrow(result);
    return (result as { response: unknown }).response;
  },
  { context: AGENT_LOOP_CONTEXT, awaitingKey: 'awaiting' },
);

const sandbox = await measure(requests, async (request) =>
  answeredOrThrow(await host.reduce({ function_path: '/lib/bench/agent-like' }, request)),
);
const direct = await measure(requests, (request) => reduce(request));
const jsTally = await measure(tally.requests, async (request) =>
  answeredOrThrow(await host.reduce({ function_path: '/lib/bench/tally-js' }, request)),
);
const wasmSeries = await measure(tally.requests, async (request) =>
  answeredOrThrow(await host.reduce({ function_path: '/lib/bench/tally' }, request)),
);
const starSeries = await measure(tally.requests, async (request) =>
  answeredOrThrow(await host.reduce({ function_path: '/lib/bench/tally-star' }, request)),
);
const agent = await measure(agentRun.requests, async (request) =>
  answeredOrThrow(await host.reduce({ function_path: '/lib/bench/agent-loop' }, request)),
);
const newArtifactMs: number[] = [];
for (let i = 0; i < 20; i++) {
  const function_path = `/lib/bench/tally-star-${i}`;
  await registry.put(function_path, 'star', new TextEncoder().encode(`${starlark}\n# copy ${i}\n`));
  newArtifactMs.push(await timedCall(host, function_path, tally.requests[0]));
}
await host.close();
const newArtifact = summarize(newArtifactMs);
const freshHost = summarize(freshHostMs);
const firstInProcess = Math.round(firstInProcessMs * 1000) / 1000;

const ratio = Math.round((sandbox.p50_ms / Math.max(direct.p50_ms, 0.001)) * 10) / 10;
const line = (name: string, s: Series) =>
  `${name.padEnd(22)} p50 ${s.p50_ms.toFixed(3).padStart(8)} ms   p99 ${s.p99_ms.toFixed(3).padStart(8)} ms   mean ${s.mean_ms.toFixed(3).padStart(8)} ms`;
console.log(
  `reducer sandbox bench: ${CALLS} calls per series after ${WARMUP} warm-up calls (node ${process.version})`,
);
console.log(line('sandbox', sandbox));
console.log(line('direct', direct));
console.log(line('js tally', jsTally));
console.log(line('wasm', wasmSeries));
console.log(line('starlark', starSeries));
console.log(`${line('starlark new artifact', newArtifact)}   (${newArtifactMs.length} artifacts)`);
console.log(`${line('starlark fresh host', freshHost)}   (${freshHostMs.length} hosts)`);
console.log(
  `starlark first in process ${firstInProcess.toFixed(3)} ms (compile, worker, runtime, load, call)`,
);
console.log(`${line('agent', agent)}   (${agentSource.byteLength} bytes: ${AGENT_ARTIFACT.pathname})`);
console.log(
  `sandbox/direct p50 ratio: ${ratio}x; target sandbox p50 <= ${TARGET_P50_MS} ms: ${sandbox.p50_ms <= TARGET_P50_MS ? 'met' : 'NOT met'}`,
);
console.log(
  JSON.stringify({
    bench: 'sandbox',
    calls: CALLS,
    warmup: WARMUP,
    node: process.version,
    sandbox,
    direct,
    js_tally: jsTally,
    wasm: wasmSeries,
    starlark: starSeries,
    starlark_new_artifact: newArtifact,
    starlark_fresh_host: freshHost,
    starlark_first_in_process_ms: firstInProcess,
    agent: { ...agent, artifact_bytes: agentSource.byteLength },
    ratio_p50: ratio,
    target_p50_ms: TARGET_P50_MS,
    target_met: sandbox.p50_ms <= TARGET_P50_MS,
  }),
);
