import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import type { ToolCallRequest } from '../../lib/engine/ports.ts';
import {
  createAuditLog,
  createPolicyGate,
  createToolHost,
  createToolRegistry,
  type ModuleHandler,
  registerOpenAiFunctionTools,
  ToolRegistrationError,
} from '../../lib/tools/index.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

const DATA = TAU_BENCH_DIR;
const toolsJson: { function: { name: string; parameters: unknown } }[] = JSON.parse(
  readFileSync(`${DATA}/tools.json`, 'utf8'),
);
/** The README's list of tools that change the booking database. */
const MUTATING = new Set([
  'book_reservation',
  'cancel_reservation',
  'update_reservation_baggages',
  'update_reservation_flights',
  'update_reservation_passengers',
  'send_certificate',
]);

function airline() {
  const fn = vi.fn<ModuleHandler['fn']>(async (_args, ctx) => ({
    ok: true,
    key: ctx.idempotency_key ?? null,
  }));
  const registry = createToolRegistry();
  const names = registerOpenAiFunctionTools(registry, toolsJson, (tool) => ({
    handler: { kind: 'module', fn },
    metadata: { mutating: MUTATING.has(tool.name), replay_safe: true },
  }));
  const host = createToolHost({ registry, gate: createPolicyGate(), audit: createAuditLog(() => {}) });
  return { fn, registry, names, host };
}

function call(tool: string, args: Record<string, unknown>, op_id = 'op-1'): ToolCallRequest {
  return {
    run_id: 'run-tau',
    op_id,
    tool,
    args,
    principal: { kind: 'agent', id: 'airline-agent', on_behalf_of: 'sara_doe_496' },
    attempt: 1,
    mutating: false,
    replay_safe: true,
  };
}

const never = new AbortController().signal;

describe('tau-bench airline tools', () => {
  it('registers all 14 tools with their parameter schemas as input schemas', () => {
    const { registry, names } = airline();
    expect(names).toHaveLength(14);
    const listed = registry.list();
    expect(listed.map((tool) => tool.name)).toEqual(toolsJson.map((tool) => tool.function.name).sort());
    for (const tool of toolsJson) {
      const descriptor = listed.find((d) => d.name === tool.function.name);
      expect(descriptor?.input_schema).toEqual(tool.function.parameters);
      expect(descriptor?.version).toBe('1.0.0');
      expect(descriptor?.metadata.mutating).toBe(MUTATING.has(tool.function.name));
    }
  });

  it('refuses a bad argument with invalid_input before the handler runs', async () => {
    const { fn, host } = airline();

    const envelope = await host.execute(
      call('book_reservation', {
        user_id: 'sara_doe_496',
        origin: 'SFO',
        destination: 'JFK',
        cabin: 'first',
      }),
      never,
    );

    expect(fn).not.toHaveBeenCalled();
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'invalid_input' });
    const messages = envelope.diagnostics.map((d) => d.message);
    expect(messages).toContain('/cabin must be equal to one of the allowed values');
    expect(messages.some((m) => m.includes("required property 'flight_type'"))).toBe(true);
  });

  it('refuses a wrongly typed argument of a simple tool', async () => {
    const { fn, host } = airline();
    const envelope = await host.execute(
      call('update_reservation_baggages', {
        reservation_id: 'ZFA04Y',
        total_baggages: 'two',
        nonfree_baggages: 0,
        payment_id: 'gift_card_1',
      }),
      never,
    );
    expect(envelope.error_class).toBe('invalid_input');
    expect(fn).not.toHaveBeenCalled();
  });

  it('runs every tool call recorded in the 160 GPT-4o conversations, keyed by op_id when mutating', async () => {
    const { fn, host } = airline();
    const trajectories: {
      traj: { tool_calls?: { id: string; function: { name: string; arguments: string } }[] }[];
    }[] = JSON.parse(readFileSync(`${DATA}/trajectories.json`, 'utf8'));
    const calls = trajectories.flatMap((t) => t.traj.flatMap((m) => m.tool_calls ?? []));

    const envelopes = await Promise.all(
      calls.map((c, i) =>
        host.execute(call(c.function.name, JSON.parse(c.function.arguments), `op-${i}`), never),
      ),
    );

    expect(calls.length).toBeGreaterThan(900);
    expect(envelopes.filter((e) => e.status !== 'succeeded')).toEqual([]);
    expect(fn).toHaveBeenCalledTimes(calls.length);
    const mutatingIndex = calls.findIndex((c) => MUTATING.has(c.function.name));
    expect(envelopes[mutatingIndex]?.payload).toEqual({ ok: true, key: `op-${mutatingIndex}` });
  });

  it('refuses a tools file that is not a list of function tools', () => {
    expect(() =>
      registerOpenAiFunctionTools(createToolRegistry(), { tools: [] }, () => {
        throw new Error('not reached');
      }),
    ).toThrow(ToolRegistrationError);
  });
});
