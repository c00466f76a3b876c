import { describe, expect, it, vi } from 'vitest';
import { type Principal, TOOL_RESULT_ENVELOPE, ToolResultEnvelope } from '../../lib/contracts/index.ts';
import type { ToolCallRequest } from '../../lib/engine/ports.ts';
import {
  type AuditEvent,
  createAuditLog,
  createPolicyGate,
  createToolHost,
  createToolRegistry,
  type ModuleHandler,
  type PolicyRule,
  ToolError,
  type ToolFault,
  type ToolInvocationContext,
  type ToolMetadataInput,
} from '../../lib/tools/index.ts';

const principal: Principal = { kind: 'agent', id: 'agent-7', on_behalf_of: 'user-3' };

type Fn = ModuleHandler['fn'];

interface ToolSpec {
  name?: string;
  fn: Fn;
  schema?: Record<string, unknown>;
  metadata?: Partial<ToolMetadataInput>;
}

function setup(specs: ToolSpec[], rules: PolicyRule[] = []) {
  const registry = createToolRegistry();
  for (const spec of specs) {
    registry.register({
      name: spec.name ?? 'echo',
      version: '1.0.0',
      input_schema: spec.schema ?? { type: 'object' },
      handler: { kind: 'module', fn: spec.fn },
      metadata: { mutating: false, replay_safe: true, ...spec.metadata },
    });
  }
  const events: AuditEvent[] = [];
  const faults: ToolFault[] = [];
  const host = createToolHost({
    registry,
    gate: createPolicyGate(rules),
    audit: createAuditLog((event) => events.push(event), { clock: { now: () => 1_700_000_000_000 } }),
    finalizeGraceMs: 50,
    debug: (fault) => faults.push(fault),
  });
  return { host, events, faults, registry };
}

function request(overrides: Partial<ToolCallRequest> = {}): ToolCallRequest {
  return {
    run_id: 'run-1',
    op_id: 'op-1',
    tool: 'echo',
    args: {},
    principal,
    attempt: 2,
    mutating: false,
    replay_safe: true,
    ...overrides,
  };
}

const never = new AbortController().signal;

describe('tool host: validation and context', () => {
  it('refuses args that violate the schema with invalid_input and never calls the handler', async () => {
    const fn = vi.fn<Fn>(async () => 'ran');
    const { host, events } = setup([
      {
        fn,
        schema: {
          type: 'object',
          properties: { count: { type: 'integer' }, mode: { enum: ['a', 'b'] } },
          required: ['count', 'mode'],
        },
      },
    ]);

    const envelope = await host.execute(request({ args: { count: 'three' } }), never);

    expect(fn).not.toHaveBeenCalled();
    expect(envelope).toMatchObject({
      status: 'failed',
      error_class: 'invalid_input',
      retry_policy: { retryable: false },
    });
    const messages = envelope.diagnostics.map((d) => d.message);
    expect(messages).toContain('/count must be integer');
    expect(messages).toContain("args must have required property 'mode'");
    expect(events.map((e) => [e.event, e.error_code])).toEqual([['failed', 'invalid_input']]);
  });

  it('strips __raisin_context before validation and hands the merged context to the handler', async () => {
    const fn = vi.fn<Fn>(async (args) => args);
    const { host } = setup([
      { fn, schema: { type: 'object', properties: { q: { type: 'string' } }, additionalProperties: false } },
    ]);

    const envelope = await host.execute(
      request({
        args: { q: 'x', __raisin_context: { run_id: 'forged', operation_id: 'forged', trace: 't-9' } },
      }),
      never,
    );

    expect(envelope.status).toBe('succeeded');
    expect(fn.mock.calls[0]?.[0]).toEqual({
      q: 'x',
      __raisin_context: { trace: 't-9', run_id: 'run-1', operation_id: 'op-1' },
    });
  });

  it('gives the handler frozen copies, leaving the request args untouched', async () => {
    const args = { list: [1, 2] };
    let mutationError: unknown;
    const { host } = setup([
      {
        fn: async (given) => {
          try {
            (given.list as number[]).push(3);
          } catch (error) {
            mutationError = error;
          }
          return null;
        },
      },
    ]);

    await host.execute(request({ args }), never);

    expect(mutationError).toBeInstanceOf(TypeError);
    expect(args).toEqual({ list: [1, 2] });
  });

  it('passes the run principal and attempt, and the op_id as idempotency key only when mutating', async () => {
    const seen: ToolInvocationContext[] = [];
    const fn: Fn = async (_args, ctx) => {
      seen.push(ctx);
      return null;
    };
    const { host } = setup([
      { name: 'read', fn },
      { name: 'write', fn, metadata: { mutating: true, replay_safe: true } },
    ]);

    await host.execute(request({ tool: 'read' }), never);
    await host.execute(request({ tool: 'read', mutating: true, op_id: 'op-2' }), never);
    await host.execute(request({ tool: 'write', op_id: 'op-3' }), never);

    expect(seen.map((ctx) => ctx.idempotency_key)).toEqual([undefined, 'op-2', 'op-3']);
    expect(seen[0]).toMatchObject({ run_id: 'run-1', operation_id: 'op-1', attempt: 2, principal });
    expect(seen[0]?.signal).toBeInstanceOf(AbortSignal);
  });

  it('answers an unknown tool with a not_found envelope', async () => {
    const { host, events } = setup([]);
    const envelope = await host.execute(request({ tool: 'nope' }), never);
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'not_found', operation_id: 'op-1' });
    expect(envelope.diagnostics[0]?.code).toBe('tool_not_registered');
    expect(events).toMatchObject([{ event: 'failed', tool: 'nope', tool_version: null }]);
  });

  it('refuses args without a JSON form with invalid_input instead of throwing', async () => {
    const fn = vi.fn<Fn>(async () => null);
    const { host } = setup([{ fn }]);
    const envelope = await host.execute(request({ args: { n: 1n } }), never);
    expect(envelope.error_class).toBe('invalid_input');
    expect(fn).not.toHaveBeenCalled();
  });

  it('refuses args that are not an object with invalid_input', async () => {
    const fn = vi.fn<Fn>(async () => null);
    const { host } = setup([{ fn }]);
    const envelope = await host.execute(
      request({ args: [1, 2] as unknown as Record<string, unknown> }),
      never,
    );
    expect(envelope.error_class).toBe('invalid_input');
    expect(fn).not.toHaveBeenCalled();
  });
});

describe('tool host: policy', () => {
  it('re-checks the gate on execute: a denied call fails with permission_denied and no side effect', async () => {
    const fn = vi.fn<Fn>(async () => null);
    const { host, events } = setup(
      [{ fn, metadata: { risk: 'high' } }],
      [{ effect: 'deny', risk: ['high'] }],
    );

    const envelope = await host.execute(request(), never);

    expect(fn).not.toHaveBeenCalled();
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'permission_denied' });
    expect(envelope.diagnostics[0]?.code).toBe('tool_denied_by_policy');
    expect(events.map((e) => [e.event, e.error_code])).toEqual([['denied', 'tool_denied_by_policy']]);
  });

  it('audits gate decisions that deny or wait for approval, and nothing for allow', () => {
    const { host, events } = setup(
      [
        { name: 'read', fn: async () => null },
        { name: 'pay', fn: async () => null, metadata: { approval: 'always' } },
        { name: 'drop', fn: async () => null },
      ],
      [{ effect: 'deny', tools: ['drop'] }],
    );

    expect(host.gate(request({ tool: 'read' }))).toEqual({ decision: 'allow' });
    expect(host.gate(request({ tool: 'pay', args: { amount: 3 } })).decision).toBe('require_approval');
    expect(host.gate(request({ tool: 'drop' }))).toEqual({ decision: 'deny', code: 'tool_denied_by_policy' });
    expect(host.gate(request({ tool: 'ghost' }))).toEqual({ decision: 'deny', code: 'tool_not_registered' });

    expect(events.map((e) => [e.event, e.tool, e.error_code])).toEqual([
      ['approval_pending', 'pay', undefined],
      ['denied', 'drop', 'tool_denied_by_policy'],
      ['denied', 'ghost', 'tool_not_registered'],
    ]);
  });

  it('treats a call as mutating for approval when the effect says so even if the tool does not', () => {
    const { host } = setup([{ fn: async () => null, metadata: { approval: 'when_mutating' } }]);
    expect(host.gate(request({ mutating: false })).decision).toBe('allow');
    expect(host.gate(request({ mutating: true })).decision).toBe('require_approval');
  });

  it('lists descriptors and seals the registry it serves', () => {
    const { host, registry } = setup([{ fn: async () => null }]);
    expect(host.list().map((tool) => tool.name)).toEqual(['echo']);
    expect(registry.sealed).toBe(true);
  });
});

describe('tool host: deadlines and cancellation', () => {
  it('times out at min(request timeout, tool timeout) with a retryable timeout envelope', async () => {
    let handlerSignal: AbortSignal | undefined;
    let handlerTimeout = 0;
    const { host, events } = setup([
      {
        fn: (_args, ctx) => {
          handlerSignal = ctx.signal;
          handlerTimeout = ctx.timeout_ms;
          return new Promise((_resolve, reject) =>
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
          );
        },
        metadata: { timeout_ms: 10_000 },
      },
    ]);

    const envelope = await host.execute(request({ timeout_ms: 30 }), never);

    expect(handlerTimeout).toBe(30);
    expect(handlerSignal?.aborted).toBe(true);
    expect(envelope).toMatchObject({
      status: 'failed',
      error_class: 'timeout',
      retry_policy: { retryable: true },
    });
    expect(events.map((e) => e.event)).toEqual(['accepted', 'started', 'timed_out']);
  });

  it('uses the tool timeout when it is shorter than the request timeout', async () => {
    let handlerTimeout = 0;
    const { host } = setup([
      {
        fn: async (_args, ctx) => {
          handlerTimeout = ctx.timeout_ms;
          return null;
        },
        metadata: { timeout_ms: 20 },
      },
    ]);
    await host.execute(request({ timeout_ms: 60_000 }), never);
    expect(handlerTimeout).toBe(20);
  });

  it('answers a handler that ignores its signal once the grace period after the deadline ends', async () => {
    const { host } = setup([{ fn: () => new Promise(() => {}), metadata: { timeout_ms: 20 } }]);
    const started = Date.now();
    const envelope = await host.execute(request(), never);
    expect(envelope.error_class).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('waits for a cooperative handler to finalize before answering a cancellation', async () => {
    const controller = new AbortController();
    const order: string[] = [];
    const { host, events } = setup([
      {
        fn: (_args, ctx) =>
          new Promise((_resolve, reject) => {
            ctx.signal.addEventListener('abort', () => {
              setTimeout(() => {
                order.push('handler finalized');
                reject(new Error('aborted'));
              }, 10);
            });
            setTimeout(() => controller.abort(), 5);
          }),
      },
    ]);

    const envelope = await host.execute(request(), controller.signal);
    order.push('host answered');

    expect(order).toEqual(['handler finalized', 'host answered']);
    expect(envelope.status).toBe('failed');
    expect(envelope.error_class).toBeUndefined();
    expect(envelope.diagnostics[0]?.code).toBe('cancelled');
    expect(envelope.retry_policy).toEqual({ retryable: false });
    expect(events.map((e) => e.event)).toEqual(['accepted', 'started', 'cancelled']);
  });

  it('does not call the handler when the signal is already aborted', async () => {
    const fn = vi.fn<Fn>(async () => null);
    const { host, events } = setup([{ fn }]);
    const envelope = await host.execute(request(), AbortSignal.abort());
    expect(fn).not.toHaveBeenCalled();
    expect(envelope.diagnostics[0]?.code).toBe('cancelled');
    expect(events.map((e) => e.event)).toEqual(['accepted', 'cancelled']);
  });
});

describe('tool host: results and errors', () => {
  it('wraps a plain result as a succeeded legacy envelope with the payload', async () => {
    const { host, events } = setup([{ fn: async () => ({ seats: 3 }) }]);
    const envelope = await host.execute(request(), never);
    expect(envelope).toEqual({
      envelope: TOOL_RESULT_ENVELOPE,
      operation_id: 'op-1',
      status: 'succeeded',
      reads: [],
      writes: [],
      artifact_refs: [],
      evidence: [],
      diagnostics: [],
      suggested_next_actions: [],
      payload: { seats: 3 },
      legacy: true,
    });
    expect(events.map((e) => [e.event, e.outcome])).toEqual([
      ['accepted', 'accepted'],
      ['started', 'started'],
      ['completed', 'succeeded'],
    ]);
  });

  it('wraps undefined as a null payload', async () => {
    const { host } = setup([{ fn: async () => undefined }]);
    expect((await host.execute(request(), never)).payload).toBeNull();
  });

  it('passes an envelope through with this operation id and without legacy', async () => {
    const answer = {
      envelope: TOOL_RESULT_ENVELOPE,
      operation_id: 'someone-else',
      status: 'succeeded',
      writes: [{ locator: { workspace: 'w', path: '/a' }, action: 'created' }],
      artifact_refs: [{ kind: 'node', locator: { workspace: 'w', path: '/a' }, role: 'primary' }],
      payload: { id: 'a' },
    };
    const { host } = setup([{ fn: async () => answer }]);

    const envelope = await host.execute(request(), never);

    expect(ToolResultEnvelope.safeParse(envelope).success).toBe(true);
    expect(envelope).toMatchObject({ ...answer, operation_id: 'op-1' });
    expect(envelope.legacy).toBeUndefined();
  });

  it('audits a handler envelope with status failed as failed with its error class', async () => {
    const answer = { envelope: TOOL_RESULT_ENVELOPE, status: 'failed', error_class: 'conflict' };
    const { host, events } = setup([{ fn: async () => answer }]);
    const envelope = await host.execute(request(), never);
    expect(envelope.error_class).toBe('conflict');
    expect(events.at(-1)).toMatchObject({ event: 'failed', error_code: 'conflict' });
  });

  it('refuses a result that claims to be an envelope but is malformed, naming the field', async () => {
    const { host, events } = setup([
      { fn: async () => ({ envelope: TOOL_RESULT_ENVELOPE, status: 'great' }) },
    ]);
    const envelope = await host.execute(request(), never);
    expect(envelope).toMatchObject({
      status: 'failed',
      error_class: 'tool_error',
      retry_policy: { retryable: false },
    });
    expect(envelope.diagnostics[0]).toMatchObject({ code: 'envelope_mismatch', path: 'status' });
    expect(events.at(-1)).toMatchObject({ event: 'failed', error_code: 'envelope_mismatch' });
  });

  it.each([
    ['waiting_without_resume_key', { status: 'waiting', resume_key: '' }, 'resume_key'],
    [
      'writes_without_primary',
      { status: 'succeeded', writes: [{ locator: { path: '/a' }, action: 'created' }] },
      'artifact_refs',
    ],
    [
      'evidence_revision_without_alg',
      { status: 'succeeded', evidence: [{ kind: 'read_back', subject: { revision: { value: 'r1' } } }] },
      'evidence.0.subject.revision.alg',
    ],
  ])(
    'refuses a dispatched envelope with %s, so its writes and evidence never reach the reducer',
    async (code, fields, path) => {
      const { host, events } = setup([{ fn: async () => ({ envelope: TOOL_RESULT_ENVELOPE, ...fields }) }]);
      const envelope = await host.execute(request(), never);
      expect(envelope).toMatchObject({
        status: 'failed',
        error_class: 'tool_error',
        writes: [],
        evidence: [],
      });
      expect(envelope.diagnostics).toEqual([expect.objectContaining({ code, path, severity: 'error' })]);
      expect(events.at(-1)).toMatchObject({ event: 'failed', error_code: code });
    },
  );

  it('drops a result nested deeper than MAX_JSON_DEPTH with output_too_deep', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200; i += 1) deep = [deep];
    const { host } = setup([{ fn: async () => ({ deep }) }]);
    const envelope = await host.execute(request(), never);
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'tool_error' });
    expect(envelope.diagnostics[0]?.code).toBe('output_too_deep');
  });

  it('drops a result larger than max_output_bytes with output_too_large', async () => {
    const { host, events } = setup([
      { fn: async () => ({ text: 'x'.repeat(500) }), metadata: { max_output_bytes: 100 } },
    ]);
    const envelope = await host.execute(request(), never);
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'tool_error' });
    expect(envelope.diagnostics[0]?.code).toBe('output_too_large');
    expect(envelope.payload).toBeUndefined();
    expect(events.at(-1)).toMatchObject({ event: 'failed', error_code: 'output_too_large' });
  });

  it('refuses a result with no JSON form with output_not_json', async () => {
    const { host } = setup([{ fn: async () => ({ big: 10n }) }]);
    expect((await host.execute(request(), never)).diagnostics[0]?.code).toBe('output_not_json');
  });

  it('maps a thrown ToolError to its class, code, message and retryability', async () => {
    const { host } = setup([
      {
        name: 'seat',
        fn: async () => Promise.reject(new ToolError('conflict', 'seat 3A is taken', { code: 'seat_taken' })),
      },
      { name: 'busy', fn: async () => Promise.reject(new ToolError('rate_limited', 'slow down')) },
      {
        name: 'odd',
        fn: async () =>
          Promise.reject(new ToolError('transient', 'flaky', { retryable: false, code: 'bad code!' })),
      },
    ]);

    const seat = await host.execute(request({ tool: 'seat' }), never);
    const busy = await host.execute(request({ tool: 'busy' }), never);
    const odd = await host.execute(request({ tool: 'odd' }), never);

    expect(seat).toMatchObject({
      status: 'failed',
      error_class: 'conflict',
      retry_policy: { retryable: false },
    });
    expect(seat.diagnostics[0]).toMatchObject({
      code: 'seat_taken',
      message: 'seat 3A is taken',
      class: 'repairable',
    });
    expect(busy).toMatchObject({ error_class: 'rate_limited', retry_policy: { retryable: true } });
    expect(busy.diagnostics[0]).toMatchObject({ code: 'rate_limited', class: 'transient' });
    expect(odd).toMatchObject({ error_class: 'transient', retry_policy: { retryable: false } });
    expect(odd.diagnostics[0]?.code).toBe('transient');
  });

  it('hides the text of any other exception, sync or async, and hands it to the debug hook only', async () => {
    const secret = new Error('db password is hunter2');
    const { host, faults } = setup([
      { name: 'async', fn: async () => Promise.reject(secret) },
      {
        name: 'sync',
        fn: () => {
          throw secret;
        },
      },
    ]);

    for (const tool of ['async', 'sync']) {
      const envelope = await host.execute(request({ tool }), never);
      expect(envelope).toMatchObject({ status: 'failed', error_class: 'tool_error' });
      expect(envelope.diagnostics[0]?.message).toBe('the tool failed');
      expect(JSON.stringify(envelope)).not.toContain('hunter2');
    }
    expect(faults.map((fault) => [fault.tool, fault.error])).toEqual([
      ['async', secret],
      ['sync', secret],
    ]);
  });
});

describe('tool host: audit', () => {
  it('emits only ids, identity, outcome, duration and codes: no args, results, headers or exception text', async () => {
    const marker = 'MARKER-5f1c9';
    const secret = 'SECRET-b7e2';
    const { host, events } = setup(
      [
        { name: 'echo', fn: async (args) => ({ echoed: args, note: marker }) },
        {
          name: 'boom',
          fn: async () => {
            throw new Error(`${secret} at /home/app/config.ts`);
          },
        },
        { name: 'typed', fn: async () => Promise.reject(new ToolError('conflict', `${secret} typed`)) },
        { name: 'pay', fn: async () => marker, metadata: { approval: 'always' } },
        {
          name: 'strict',
          fn: async () => marker,
          schema: { type: 'object', properties: { n: { type: 'number' } } },
        },
      ],
      [],
    );
    const args = { q: marker, nested: { deep: [marker] }, __raisin_context: { token: secret } };

    await host.execute(request({ tool: 'echo', args }), never);
    await host.execute(request({ tool: 'boom', args }), never);
    await host.execute(request({ tool: 'typed', args }), never);
    host.gate(request({ tool: 'pay', args }));
    await host.execute(request({ tool: 'strict', args: { n: marker } }), never);
    await host.execute(request({ tool: 'echo', args, timeout_ms: 1 }), AbortSignal.abort());

    const text = JSON.stringify(events);
    expect(events.length).toBeGreaterThanOrEqual(10);
    expect(text).not.toContain(marker);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('config.ts');
    expect(text).not.toContain('agent-7');
    const allowed = [
      'at',
      'duration_ms',
      'error_code',
      'event',
      'operation_id',
      'outcome',
      'run_id',
      'tool',
      'tool_version',
    ];
    for (const event of events) {
      expect(Object.keys(event).every((key) => allowed.includes(key))).toBe(true);
      expect(event.at).toBe('2023-11-14T22:13:20.000Z');
    }
  });

  it('keeps answering when the audit sink throws', async () => {
    const registry = createToolRegistry();
    registry.register({
      name: 'echo',
      version: '1.0.0',
      input_schema: { type: 'object' },
      handler: { kind: 'module', fn: async () => 1 },
      metadata: { mutating: false, replay_safe: true },
    });
    const sinkErrors: unknown[] = [];
    const audit = createAuditLog(
      () => {
        throw new Error('disk full');
      },
      { onSinkError: (error) => sinkErrors.push(error) },
    );
    const host = createToolHost({ registry, gate: createPolicyGate(), audit });

    expect((await host.execute(request(), never)).status).toBe('succeeded');
    expect(sinkErrors).toHaveLength(3);
  });
});
