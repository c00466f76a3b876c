/**
 * The contract pages (docs/contracts/*.md) show shapes the runtime takes: every JSON block
 * marked `<!-- contract-example: NAME -->` parses with the zod schema NAME of lib/contracts,
 * the reducer page's example answer passes core's validation against its example request, and
 * the reducer page's JavaScript reducer (marked `reducer-js`) answers a run's events in the
 * QuickJS sandbox with answers core accepts, ignoring a repeated event.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  Control,
  ModelTurnError,
  ModelTurnInput,
  ModelTurnOutput,
  REDUCER_CONTRACT,
  ReducerRequest,
  ReducerResponse,
  ToolResultEnvelope,
  TurnOutcome,
} from '../../lib/contracts/index.ts';
import { validateReducerResponse } from '../../lib/core/reducer-validation.ts';
import { validateToolResult } from '../../lib/core/tool-result-validation.ts';
import { createSandboxReducerHost, InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';

const DIR = resolve(import.meta.dirname, '../../docs/contracts');

const SCHEMAS: Record<string, z.ZodType> = {
  Control,
  ModelTurnError,
  ModelTurnInput,
  ModelTurnOutput,
  ReducerRequest,
  ReducerResponse,
  ToolResultEnvelope,
  TurnOutcome,
};

interface Example {
  file: string;
  name: string;
  body: string;
}

/** Every fenced block preceded by a `<!-- contract-example: NAME -->` line (blank lines between allowed). */
function examples(): Example[] {
  const found: Example[] = [];
  for (const file of readdirSync(DIR).filter((name) => name.endsWith('.md'))) {
    const text = readFileSync(join(DIR, file), 'utf8');
    for (const match of text.matchAll(/<!-- contract-example: (\S+) -->\s*\n```\w*\n([\s\S]*?)\n```/g)) {
      found.push({ file, name: match[1] as string, body: match[2] as string });
    }
  }
  return found;
}

const all = examples();
const byName = (name: string) => {
  const example = all.find((e) => e.name === name);
  if (example === undefined) throw new Error(`no contract-example ${name}`);
  return example;
};

describe('the contract pages', () => {
  it('mark an example of every contract', () => {
    expect(new Set(all.map((e) => e.name))).toEqual(new Set([...Object.keys(SCHEMAS), 'reducer-js']));
  });

  it.each(all.filter((e) => e.name !== 'reducer-js').map((e) => [`${e.file}: ${e.name}`, e] as const))(
    '%s parses with its schema',
    (_label, example) => {
      const schema = SCHEMAS[example.name];
      expect(schema, `unknown schema ${example.name}`).toBeDefined();
      const result = schema?.safeParse(JSON.parse(example.body));
      expect(result?.error?.issues ?? []).toEqual([]);
    },
  );

  it("accept the reducer page's answer to its request, and its envelope", () => {
    const request = ReducerRequest.parse(JSON.parse(byName('ReducerRequest').body));
    const verdict = validateReducerResponse(request, JSON.parse(byName('ReducerResponse').body));
    expect(verdict).toMatchObject({ ok: true });
    expect(validateToolResult(JSON.parse(byName('ToolResultEnvelope').body))).toMatchObject({ ok: true });
  });

  it('refuse a turn outcome that breaks a rule of its schema (the check can fail)', () => {
    const completed = JSON.parse(byName('TurnOutcome').body);
    delete completed['product/digest'];
    expect(TurnOutcome.safeParse(completed).success).toBe(false);
  });
});

describe("the reducer page's JavaScript reducer", () => {
  const registry = new InMemoryFunctionRegistry([
    {
      function_path: '/docs/one-tool',
      kind: 'js',
      bytes: new TextEncoder().encode(byName('reducer-js').body),
    },
  ]);
  const host = createSandboxReducerHost({ registry });
  afterAll(() => host.close());

  const run = {
    run_id: 'run_doc',
    status: 'running',
    turn: 0,
    last_seq: 1,
    usage: {},
    budgets: {},
    open_requests: [],
    unanswered_calls: [],
    subject: { workspace: 'docs', path: '/example' },
  };

  async function reduce(state: unknown, stateRev: number, event: ReducerRequest['event']) {
    const request = ReducerRequest.parse({
      contract: REDUCER_CONTRACT,
      accept: [REDUCER_CONTRACT],
      run: { ...run, last_seq: event.seq },
      state,
      state_rev: stateRev,
      event,
    });
    const called = await host.reduce({ function_path: '/docs/one-tool' }, request);
    if (called.kind !== 'answered') throw new Error(`reducer ${called.kind}`);
    const verdict = validateReducerResponse(request, called.response);
    expect(verdict).toMatchObject({ ok: true });
    return ReducerResponse.parse(called.response);
  }

  it('calls the tool, completes with its answer, and answers a repeated event with no effects', async () => {
    const started = await reduce(null, 0, { seq: 1, kind: 'run_started', data: { input: 'go' } });
    expect(started.effects).toMatchObject([{ effect_id: '1:0', kind: 'call_tool', tool: 'add' }]);

    const envelope = { envelope: 'raisin.tool-result/1', status: 'succeeded', payload: { sum: 5 } };
    const result = {
      seq: 4,
      kind: 'tool_result' as const,
      effect_id: '1:0',
      data: { tool: 'add', envelope: ToolResultEnvelope.parse(envelope) },
    };
    const done = await reduce(started.state, started.state_rev, result);
    expect(done.effects).toMatchObject([
      { effect_id: '2:0', kind: 'complete', outcome: 'succeeded', summary: 'sum 5' },
    ]);

    const repeat = await reduce(done.state, done.state_rev, result);
    expect(repeat.effects).toEqual([]);
    expect(repeat.state_rev).toBe(done.state_rev);
  });
});
