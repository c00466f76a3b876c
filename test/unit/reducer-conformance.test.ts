/**
 * One reducer, three languages, the same answers: the tally reducer written in JavaScript
 * (QuickJS), Starlark (go.starlark.net) and WebAssembly (WAT built with wabt), run through the
 * one sandbox host, each fed the same sequence of events (a start, a redelivered start, a
 * steer, a tool result and its redelivery, a failed operation it refuses, a stop), each
 * driving its own chain of state. Every answer must be byte-identical canonical JSON, and a
 * valid reducer/1 answer. Seed: agent-runs, "Deterministic by policy" ("JavaScript, Starlark
 * and WebAssembly reducers behave the same"); agent-run-contracts, "Writing a deterministic
 * reducer".
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReducerRequest } from '../../lib/contracts/index.ts';
import { canonicalJson } from '../../lib/core/canonical.ts';
import { validateReducerResponse } from '../../lib/core/reducer-validation.ts';
import {
  type ArtifactKind,
  createSandboxReducerHost,
  InMemoryFunctionRegistry,
} from '../../lib/sandbox/index.ts';
import { compileWatFixture } from '../fixtures/reducers/compile-wat.ts';
import { reducerRequest, runStarted, toolResult } from '../fixtures/reducers/requests.ts';

type ReducerEvent = ReducerRequest['event'];

const LANGUAGES: ReadonlyArray<{ kind: ArtifactKind; file: string }> = [
  { kind: 'js', file: 'tally.js' },
  { kind: 'star', file: 'tally.star' },
  { kind: 'wasm', file: 'tally.wat' },
];

/** The events, in order; a redelivery repeats an earlier event exactly. */
const EVENTS: ReadonlyArray<{ name: string; event: ReducerEvent }> = [
  { name: 'run_started', event: runStarted(1) },
  { name: 'run_started redelivered', event: runStarted(1) },
  {
    name: 'user_input',
    event: { seq: 2, kind: 'user_input', data: { steer_id: 's1', input: { text: 'hurry', n: 2 } } },
  },
  { name: 'tool_result', event: toolResult(3, '1:0', 'call_1', { counted: 1, note: 'é "quoted" ✓' }) },
  {
    name: 'tool_result redelivered',
    event: toolResult(3, '1:0', 'call_1', { counted: 1, note: 'é "quoted" ✓' }),
  },
  {
    name: 'operation_failed (refused)',
    event: {
      seq: 4,
      kind: 'operation_failed',
      effect_id: '3:0',
      operation_id: 'run_sandbox_1/op/4',
      data: { error_class: 'tool_error', retryable: false, outcome_unknown: false, message: 'no' },
    },
  },
  { name: 'stopped', event: { seq: 5, kind: 'stopped', data: { reason: 'changed my mind' } } },
];

const registry = new InMemoryFunctionRegistry();
const host = createSandboxReducerHost({ registry, limits: { timeoutMs: 10_000 } });
afterAll(() => host.close());

/** Per language: the canonical answer to each event, each request built from its own previous answer. */
const answers = new Map<ArtifactKind, string[]>();
const requests: ReducerRequest[] = [];

beforeAll(async () => {
  for (const { kind, file } of LANGUAGES) {
    const bytes =
      kind === 'wasm'
        ? await compileWatFixture(file)
        : new Uint8Array(await readFile(new URL(`../fixtures/reducers/${file}`, import.meta.url)));
    await registry.put(`/lib/conformance/${kind}`, kind, bytes);
  }
  for (const { kind } of LANGUAGES) {
    let state: unknown = null;
    let stateRev = 0;
    const texts: string[] = [];
    for (const { event } of EVENTS) {
      const request = reducerRequest(event, state, stateRev);
      if (kind === 'js') requests.push(request);
      const result = await host.reduce({ function_path: `/lib/conformance/${kind}` }, request);
      if (result.kind !== 'answered') throw new Error(`${kind} did not answer: ${JSON.stringify(result)}`);
      const response = result.response as { state: unknown; state_rev: number; refused: unknown };
      texts.push(canonicalJson(response));
      if (response.refused === null) {
        state = response.state;
        stateRev = response.state_rev;
      }
    }
    answers.set(kind, texts);
  }
}, 60_000);

describe('the tally reducer in JavaScript, Starlark and WebAssembly', () => {
  it.each(EVENTS.map(({ name }, i) => ({ name, i })))(
    'answers $name with byte-identical canonical JSON in all three languages',
    ({ i }) => {
      const [js, star, wasm] = LANGUAGES.map(({ kind }) => answers.get(kind)?.[i]);
      expect(js).toBeTypeOf('string');
      expect(star).toBe(js);
      expect(wasm).toBe(js);
    },
  );

  it('gives valid reducer/1 answers that follow the deterministic recipe', () => {
    const js = (answers.get('js') ?? []).map((text) => JSON.parse(text) as Record<string, unknown>);
    const checked = js.map((response, i) => validateReducerResponse(requests[i] as ReducerRequest, response));
    expect(checked.map((c) => c.ok)).toEqual(EVENTS.map(() => true));
    expect(js.map((r) => [r.state_rev, (r.effects as Array<{ kind: string }>).map((e) => e.kind)])).toEqual([
      [1, ['call_tool']],
      [1, []],
      [2, []],
      [3, ['complete']],
      [3, []],
      [3, []],
      [4, ['checkpoint']],
    ]);
    expect(js[5]?.refused).toEqual({ code: 'tally_operation_failed', message: 'an operation failed' });
    expect(js[6]?.state).toEqual({ events: 4, last_event_seq: 5 });
  });
});
