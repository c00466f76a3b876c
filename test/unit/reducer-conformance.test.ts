/**
 * One reducer, three languages, the same answers: the tally reducer written in JavaScript
 * (QuickJS), Starlark (go.starlark.net) and WebAssembly (WAT built with wabt), run through the
 * one sandbox host, each fed the same sequence of events (a start, a redelivered start, a
 * steer, a tool result and its redelivery, a failed operation it refuses, a stop), each
 * driving its own chain of state. Every answer must be byte-identical canonical JSON, and a
 * valid reducer/1 answer. docs/contracts/run-lifecycle.md, "Deterministic by policy" ("JavaScript,
 * Starlark and WebAssembly reducers behave the same"); docs/contracts/README.md, "Writing a
 * deterministic reducer".
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
import { driveEvents, TALLY_EVENTS } from '../fixtures/reducers/requests.ts';

const LANGUAGES: ReadonlyArray<{ kind: ArtifactKind; file: string }> = [
  { kind: 'js', file: 'tally.js' },
  { kind: 'star', file: 'tally.star' },
  { kind: 'wasm', file: 'tally.wat' },
];
const EVENTS = TALLY_EVENTS;

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
    const driven = await driveEvents(
      async (request) => {
        const result = await host.reduce({ function_path: `/lib/conformance/${kind}` }, request);
        if (result.kind !== 'answered') throw new Error(`${kind} did not answer: ${JSON.stringify(result)}`);
        return result.response;
      },
      EVENTS.map(({ event }) => event),
    );
    if (kind === 'js') requests.push(...driven.requests);
    answers.set(
      kind,
      driven.responses.map((response) => canonicalJson(response)),
    );
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
