/**
 * The agent-loop artifact as the runtime ships it: one self-contained ES module that the QuickJS
 * sandbox (lib/sandbox) runs under the deterministic policy and its limits, answering exactly as
 * the same file does in Node.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ReducerRequest } from '../../lib/contracts/index.ts';
import { canonicalJson } from '../../lib/core/canonical.ts';
import { loadToolsOffered, loadTrajectories, toRecordedConversation } from '../../lib/models/tau-bench.ts';
import {
  AGENT_LOOP_ARTIFACT_URL,
  AGENT_LOOP_PATH,
  readAgentLoopSource,
  reduce,
} from '../../lib/reducers/index.ts';
import { createSandboxReducerHost, InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';
import { RunDriver, replayTauConversation, TAU_BENCH_DIR, tauContext } from './agent-reducer-harness.ts';

const source = readAgentLoopSource();

/** The source without comments and string/template contents, so only code tokens remain. */
function codeOnly(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/'(?:[^'\\\n]|\\.)*'/g, "''")
    .replace(/`(?:[^`\\]|\\.)*`/g, '``');
}

describe('the agent-loop artifact', () => {
  it('is registered at /lib/raisin/ai/agent-run-reducer and read from the file next to the wrapper', () => {
    expect(AGENT_LOOP_PATH).toBe('/lib/raisin/ai/agent-run-reducer');
    expect(source).toBe(readFileSync(AGENT_LOOP_ARTIFACT_URL, 'utf8'));
  });

  it('is one self-contained module: no imports, no host APIs, no clock or randomness, one export', () => {
    const code = codeOnly(source);
    expect(code).not.toMatch(/\bimport\b|\brequire\s*\(/);
    expect(code).not.toMatch(/\b(process|globalThis|fetch|setTimeout|setInterval|queueMicrotask|console)\b/);
    expect(code).not.toMatch(/\bDate\b|Math\.random|\bperformance\b|\bcrypto\b/);
    expect(code).not.toMatch(/\bstructuredClone\b|\bBuffer\b|\bTextEncoder\b/);
    expect(code.match(/\bexport\b/g)).toEqual(['export']);
    expect(code).toMatch(/export function reduce\(request\)/);
  });

  it('answers in the QuickJS sandbox exactly as in Node, step by step through recorded conversations', async () => {
    const registry = new InMemoryFunctionRegistry([
      { function_path: AGENT_LOOP_PATH, kind: 'js', bytes: new TextEncoder().encode(source) },
    ]);
    const host = createSandboxReducerHost({ registry });
    const binding = { function_path: AGENT_LOOP_PATH };
    const resolved = await host.resolve(binding);
    expect(resolved?.artifact_hash).toMatch(/^[0-9a-f]{64}$/);

    const trajectories = await loadTrajectories(`${TAU_BENCH_DIR}/trajectories.json`);
    const tools = await loadToolsOffered(`${TAU_BENCH_DIR}/tools.json`);
    const requests: { request: ReducerRequest; response: unknown }[] = [];
    const recording = (request: unknown) => {
      const response = reduce(request);
      requests.push({ request: structuredClone(request) as ReducerRequest, response });
      return response;
    };
    // Three conversations: a hand-off, a long one cut at the step limit, and an early one.
    for (const index of [0, 27, 30]) {
      const traj = trajectories[index];
      if (traj === undefined) throw new Error(`no trajectory ${index}`);
      const conv = toRecordedConversation(traj);
      replayTauConversation(conv, tauContext(conv.system, tools), new RunDriver(`q-${index}`, recording));
    }

    // The first call in a process also loads QuickJS; the rest must each fit the 1 s default.
    const first = requests[0];
    if (first !== undefined) await host.reduce(binding, first.request);
    let compared = 0;
    for (const { request, response } of requests) {
      const result = await host.reduce({ ...binding, artifact_hash: resolved?.artifact_hash }, request);
      if (result.kind !== 'answered')
        throw new Error(`sandbox did not answer seq ${request.event.seq}: ${JSON.stringify(result)}`);
      expect(canonicalJson(result.response)).toBe(canonicalJson(response));
      compared += 1;
    }
    expect(compared).toBeGreaterThan(100);
    await host.close();
  });
});
