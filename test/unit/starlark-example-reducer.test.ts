/**
 * The Starlark guide's example (docs/guides/starlark-and-wasm-reducers.md),
 * examples/reducers/one-tool.star, run in the sandbox: each answer is a valid reducer/1
 * response (core's own validation), through the paths the guide names: the default echo
 * call, a tool from the context, a rejected approval, a redelivery.
 * Its end-to-end runs are in test/integration/starlark-run.int.test.ts and
 * test/e2e/starlark.e2e.test.ts.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReducerRequest } from '../../lib/contracts/index.ts';
import { validateReducerResponse } from '../../lib/core/reducer-validation.ts';
import { createSandboxReducerHost, InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';
import { reducerRequest, toolResult } from '../fixtures/reducers/requests.ts';

type ReducerEvent = ReducerRequest['event'];

const EXAMPLE = new URL('../../examples/reducers/one-tool.star', import.meta.url);
const registry = new InMemoryFunctionRegistry([
  { function_path: '/agents/one-tool', kind: 'star', bytes: new Uint8Array(await readFile(EXAMPLE)) },
]);
const host = createSandboxReducerHost({ registry, limits: { timeoutMs: 10_000 } });
afterAll(() => host.close());

/** Feeds `events` in order, each request carrying the previous valid answer's state; returns the answers. */
async function drive(events: ReducerEvent[]): Promise<Array<Record<string, unknown>>> {
  let state: unknown = null;
  let stateRev = 0;
  const answers: Array<Record<string, unknown>> = [];
  for (const event of events) {
    const request = reducerRequest(event, state, stateRev);
    const result = await host.reduce({ function_path: '/agents/one-tool' }, request);
    if (result.kind !== 'answered') throw new Error(`not answered: ${JSON.stringify(result)}`);
    const checked = validateReducerResponse(request, result.response);
    if (!checked.ok) throw new Error(`invalid answer to ${event.kind}: ${checked.code} ${checked.message}`);
    answers.push(result.response as Record<string, unknown>);
    state = checked.response.state;
    stateRev = checked.response.state_rev;
  }
  return answers;
}

const started = (context?: unknown): ReducerEvent => ({
  seq: 1,
  kind: 'run_started',
  data: { input: 'hello', ...(context === undefined ? {} : { context }) },
});

describe('examples/reducers/one-tool.star', () => {
  it('is the file the Starlark guide shows, complete', async () => {
    const guide = await readFile(
      new URL('../../docs/guides/starlark-and-wasm-reducers.md', import.meta.url),
      'utf8',
    );
    const shown =
      /`examples\/reducers\/one-tool\.star`, complete:\n\n(?:<!--[^\n]*-->\n\n)?```python\n([\s\S]*?)```/.exec(
        guide,
      )?.[1];
    expect(shown).toBe(await readFile(EXAMPLE, 'utf8'));
  });

  it('calls echo with the input, then completes with its answer; a redelivered result changes nothing', async () => {
    const result = toolResult(2, '1:0', 'call_1', { echo: { text: 'hello' } });
    const [start, done, again] = await drive([started(), result, result]);
    expect(start?.effects).toEqual([
      {
        effect_id: '1:0',
        kind: 'call_tool',
        tool: 'echo',
        args: { text: 'hello' },
        mutating: false,
        replay_safe: true,
      },
    ]);
    expect(done).toMatchObject({
      state_rev: 2,
      effects: [
        {
          effect_id: '2:0',
          kind: 'complete',
          outcome: 'succeeded',
          summary: 'echo answered {"echo":{"text":"hello"}}',
        },
      ],
      projection: { items: [{ key: 'call', title: 'Call echo', status: 'completed' }] },
    });
    expect(again).toMatchObject({ state_rev: 2, effects: [] });
  });

  it('calls the tool the context names, and completes blocked when its approval is rejected', async () => {
    const rejected: ReducerEvent = {
      seq: 2,
      kind: 'request_resolved',
      data: { request_id: 'req_1', kind: 'approval', decision: 'rejected' },
    };
    const [start, done] = await drive([
      started({ tool: 'charge', args: { amount: 42 }, mutating: true }),
      rejected,
    ]);
    expect(start?.effects).toMatchObject([{ tool: 'charge', args: { amount: 42 }, mutating: true }]);
    expect(done).toMatchObject({
      effects: [{ kind: 'complete', outcome: 'blocked', summary: 'charge was not approved' }],
      projection: { items: [{ status: 'blocked' }] },
    });
  });
});
