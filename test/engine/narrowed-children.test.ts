/**
 * Narrowed children on the memory store: a delegation's `scope` restricts the child's tools and
 * writable subjects to a subset of the parent's; the policy gate refuses a call outside it
 * (`tool_outside_delegation_scope`, `subject_not_writable`) as a failed tool result the reducer
 * sees, before any handler runs; the child's own children inherit the scope and cannot widen it
 * (`scope_widened`, nothing created).
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord, ToolDescriptor } from '../../lib/contracts/index.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import type { ToolCallRequest } from '../../lib/engine/ports.ts';
import { createPolicyGate } from '../../lib/tools/policy-gate.ts';
import { scopedStore } from '../support/faults.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { type MemoryTestEngine, makeMemoryTestEngine } from '../support/memory-engine.ts';
import { type ScopedInput, scopedReducer } from '../support/scope-reducers.ts';

const REDUCER = '/r/scoped';
const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

/** `read`, `write` (mutating) and `search`, gated by the policy gate the deployment builds. */
function tools() {
  const descriptor = (name: string): ToolDescriptor =>
    ({
      name,
      version: '1.0.0',
      input_schema: {},
      metadata: { mutating: name === 'write', risk: 'low', approval: 'never' },
    }) as unknown as ToolDescriptor;
  const policy = createPolicyGate();
  const gate = (r: ToolCallRequest) =>
    policy.decide({
      principal: r.principal,
      tool_name: r.tool,
      tool: ['read', 'write', 'search'].includes(r.tool) ? descriptor(r.tool) : undefined,
      mutating: r.mutating || r.tool === 'write',
      args: r.args,
      ...(r.scope !== undefined ? { scope: r.scope } : {}),
      ...(r.subject !== undefined ? { subject: r.subject } : {}),
    });
  const ok = async () => ({ ok: true });
  return inProcessTools({ read: ok, write: ok, search: ok }, gate);
}

async function setup() {
  const host = tools();
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ [REDUCER]: scopedReducer() }),
    tools: host,
    models: noModel,
  });
  const store = scopedStore(t.store);
  return { t, store, engine: t.another({ store }), host };
}

async function settle(t: MemoryTestEngine, engine: Engine): Promise<void> {
  for (let i = 0; i < 40; i += 1) {
    const ids = await t.drainMessages();
    if (ids.length === 0) return;
    for (const id of new Set(ids)) await engine.stepRun(id);
  }
  throw new Error('runs did not settle');
}

/** The first diagnostic code (else the status) of each tool_result of `runId`. */
async function codes(engine: Engine, runId: string): Promise<string[]> {
  const events: RunEvent[] = await engine.readEvents(runId, alice, 0, 1000);
  return events
    .filter((e) => e.kind === 'tool_result')
    .map((e) => {
      const env = e.data.envelope as { status: string; diagnostics?: { code: string }[] };
      return env.diagnostics?.[0]?.code ?? env.status;
    });
}

/** A root run of `input` (given the root's subject), its tree settled. */
async function tree(inputOf: (subject: { workspace: string; path: string }) => ScopedInput) {
  const s = await setup();
  const subject = uniqueSubject();
  const input = inputOf(subject);
  const { run } = await s.engine.createRun({ subject, reducer: { function_path: REDUCER }, input }, alice);
  await settle(s.t, s.engine);
  // The children a run started, from its delegate results (ended children leave its live list).
  const runs = async (parent: string) =>
    (await s.engine.readEvents(parent, alice, 0, 1000)).flatMap((e) => {
      const payload = (e.data.envelope as { payload?: { child_run_id?: string } } | undefined)?.payload;
      return e.kind === 'tool_result' && payload?.child_run_id !== undefined ? [payload.child_run_id] : [];
    });
  return { ...s, subject, root: run.run_id, childrenOf: runs };
}

const call = (tool: string, mutating = false) => ({ tool, mutating });

describe('a narrowed child', () => {
  it('is refused the tools outside its scope and writes outside its subjects, as tool results', async () => {
    // Prepare + Act: the root narrows its child to read and write, writable only elsewhere.
    const { engine, store, root, subject, childrenOf, host } = await tree((subject) => ({
      delegate: {
        input: { calls: [call('read'), call('write', true), call('search')] },
        scope: { tools: ['read', 'write'], writable: [{ workspace: subject.workspace, path: '/elsewhere' }] },
      },
    }));

    // Assess: the child's calls, each decided by the policy gate; no handler ran for a refused one.
    const [child] = await childrenOf(root);
    if (child === undefined) throw new Error('no child');
    expect(await codes(engine, child)).toEqual([
      'succeeded',
      'subject_not_writable',
      'tool_outside_delegation_scope',
    ]);
    const childRecord = (await store.getRun(child)) as RunRecord;
    expect(childRecord.scope).toEqual({
      tools: ['read', 'write'],
      writable: [{ workspace: subject.workspace, path: '/elsewhere' }],
    });
    expect([...host.executions.values()]).toEqual([1]); // only the read ran
    expect((await store.getRun(root))?.status).toBe('completed');
  });

  it('may write below the subjects its scope names', async () => {
    const { engine, root, childrenOf } = await tree((subject) => ({
      delegate: { input: { calls: [call('write', true)] }, scope: { writable: [subject] } },
    }));
    const [child] = await childrenOf(root);
    expect(await codes(engine, child ?? '')).toEqual(['succeeded']);
  });

  it('passes its scope on to its own children, who cannot widen it', async () => {
    // The child (tools: read) delegates twice: a grandchild that inherits, one that asks for write.
    const { engine, root, childrenOf } = await tree(() => ({
      delegate: {
        scope: { tools: ['read'] },
        input: {
          delegate: { input: { calls: [call('read'), call('write', true)] } },
        },
      },
    }));
    const [child] = await childrenOf(root);
    const [grandchild] = await childrenOf(child ?? '');
    expect(await codes(engine, grandchild ?? '')).toEqual(['succeeded', 'tool_outside_delegation_scope']);

    const widening = await tree(() => ({
      delegate: {
        scope: { tools: ['read'] },
        input: { delegate: { scope: { tools: ['read', 'write'] }, input: {} } },
      },
    }));
    const [narrowed] = await widening.childrenOf(widening.root);
    expect(await codes(widening.engine, narrowed ?? '')).toEqual(['scope_widened']);
    expect(await widening.childrenOf(narrowed ?? '')).toEqual([]);
    expect((await widening.store.getRun(narrowed ?? ''))?.counters.children).toBe(0);
  });
});
