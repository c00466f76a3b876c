import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  Effect,
  Projection,
  REDUCER_CONTRACT,
  ReducerEvent,
  ReducerRequest,
  ReducerResponse,
  TOOL_RESULT_ENVELOPE,
  ToolResultEnvelope,
} from '../../lib/contracts/index.ts';

/** The zod definition fields the walk reads (zod 4 keeps them on `_zod.def`). */
type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  options?: z.ZodType[];
  innerType?: z.ZodType;
  in?: z.ZodType;
  valueType?: z.ZodType;
  getter?: () => z.ZodType;
};
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/**
 * Every object field reachable from `root` that may be left out (its schema accepts undefined),
 * as `[path, schema]`. Walks objects, arrays, unions, pipes, optionals, nullables, defaults and
 * records, each schema once.
 */
function optionalFields(root: z.ZodType): [string, z.ZodType][] {
  const found: [string, z.ZodType][] = [];
  const seen = new Set<z.ZodType>();
  const walk = (schema: z.ZodType, path: string): void => {
    if (seen.has(schema)) return;
    seen.add(schema);
    const def = defOf(schema);
    if (def.type === 'object' && def.shape !== undefined) {
      for (const [key, field] of Object.entries(def.shape)) {
        if (field.safeParse(undefined).success) found.push([`${path}.${key}`, field]);
        walk(field, `${path}.${key}`);
      }
      return;
    }
    const inner = [def.element, def.innerType, def.in, def.valueType, def.getter?.(), ...(def.options ?? [])];
    for (const next of inner) if (next !== undefined) walk(next, path);
  };
  walk(root, '');
  return found;
}

describe('every optional field of the reducer and tool-result contracts accepts null (growth rule)', () => {
  it.each([
    ['ReducerRequest', ReducerRequest],
    ['ReducerEvent', ReducerEvent],
    ['ReducerResponse', ReducerResponse],
    ['Effect', Effect],
    ['Projection', Projection],
    ['ToolResultEnvelope', ToolResultEnvelope],
  ] as const)('%s', (_name, root) => {
    const fields = optionalFields(root);
    expect(fields.length).toBeGreaterThan(0);
    const refusingNull = fields.filter(([, field]) => !field.safeParse(null).success).map(([path]) => path);
    expect(refusingNull).toEqual([]);
  });

  it('reads null as absent: a diagnostic with class null, an event with effect_id null', () => {
    const envelope = ToolResultEnvelope.parse({
      envelope: TOOL_RESULT_ENVELOPE,
      status: 'failed',
      operation_id: null,
      writes: null,
      retry_policy: null,
      diagnostics: [{ code: 'x', severity: 'error', class: null, message: 'm', path: null }],
    });
    expect(envelope.diagnostics[0]?.class).toBeUndefined();
    expect(envelope.writes).toEqual([]);
    expect(envelope.retry_policy).toBeUndefined();

    const event = ReducerEvent.parse({
      seq: 4,
      kind: 'user_input',
      effect_id: null,
      operation_id: null,
      data: { steer_id: 's1', input: 'hi' },
    });
    expect(event.effect_id).toBeUndefined();
  });

  it('reads null as the default for defaulted fields (interruptible, effects, tool_calls)', () => {
    const effect = Effect.parse({
      effect_id: '1:0',
      kind: 'call_tool',
      tool: 't',
      args: {},
      mutating: false,
      replay_safe: true,
      interruptible: null,
      timeout_ms: null,
      for_call_id: null,
    });
    expect(effect).toMatchObject({ interruptible: true });
    const response = ReducerResponse.parse({
      contract: REDUCER_CONTRACT,
      state: null,
      state_rev: 0,
      effects: null,
      diagnostics: null,
      refused: null,
    });
    expect(response).toMatchObject({ effects: [], diagnostics: [], refused: null });
  });

  it('keeps null as the value of an any-JSON field (a run_started context of null)', () => {
    const event = ReducerEvent.parse({ seq: 1, kind: 'run_started', data: { input: null, context: null } });
    expect(event.kind === 'run_started' && event.data.context).toBeNull();
  });
});
