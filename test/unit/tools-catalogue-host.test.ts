/**
 * The catalogue tool host (lib/tools/catalogue-host.ts) over the memory registry store: each
 * call is decided by the catalogue, policy and agents its run pinned; hosts are built once per
 * pin triple; a failed build is not kept; the code's tools and policy are version 0.
 */
import { describe, expect, it } from 'vitest';
import type { RunPins } from '../../lib/contracts/index.ts';
import type { RegistryStore, ToolCallRequest } from '../../lib/engine/ports.ts';
import { createMemoryRegistryStore } from '../../lib/store/memory-registry-store.ts';
import { createAuditLog } from '../../lib/tools/audit-log.ts';
import { createCatalogueToolHost } from '../../lib/tools/catalogue-host.ts';
import { createToolRegistry } from '../../lib/tools/registry.ts';

const root = { kind: 'user' as const, id: 'root' };

function tool(name: string, version: string, approval: 'never' | 'always' = 'always') {
  return {
    name,
    version,
    input_schema: { type: 'object' },
    metadata: {
      mutating: false,
      replay_safe: true,
      risk: 'low',
      timeout_ms: 1000,
      max_output_bytes: 1024,
      approval,
    },
    target: { kind: 'lambda', function_arn: `arn:aws:lambda:us-east-1:123456789012:function:${name}` },
  };
}

/** A store that counts its reads and can be told to fail the next snapshot read. */
function countingStore(inner: RegistryStore) {
  const counts = { reads: 0, failNext: false };
  const store: RegistryStore = {
    head: (k) => {
      counts.reads++;
      return inner.head(k);
    },
    snapshot: async (k, v) => {
      counts.reads++;
      if (counts.failNext) {
        counts.failNext = false;
        throw new Error('store unreachable');
      }
      return inner.snapshot(k, v);
    },
    entry: (k, n, v) => {
      counts.reads++;
      return inner.entry(k, n, v);
    },
    versions: (k, n) => inner.versions(k, n),
    publish: (e, s) => inner.publish(e, s),
  };
  return { store, counts };
}

async function publish(
  store: RegistryStore,
  kind: 'tools' | 'policy' | 'agents',
  name: string,
  version: string,
  body: Record<string, unknown>,
) {
  const head = await store.head(kind);
  const snapshot = await store.snapshot(kind, head);
  await store.publish(
    {
      kind,
      name,
      version,
      body,
      digest: 'a'.repeat(64),
      published_at: 1,
      published_by: root,
      registry_version: head + 1,
    },
    { kind, version: head + 1, entries: { ...(snapshot?.entries ?? {}), [name]: version } },
  );
}

function host(store: RegistryStore) {
  const code = createToolRegistry();
  code.register({
    name: 'code_tool',
    version: '0.1.0',
    input_schema: { type: 'object' },
    handler: { kind: 'module', fn: async () => ({}) },
    metadata: { mutating: false, replay_safe: true },
  });
  return createCatalogueToolHost({
    code,
    codePolicy: [{ effect: 'deny', tools: ['blocked_in_code'], code: 'code_rule' }],
    registries: store,
    audit: createAuditLog(() => {}),
    secrets: async () => 'unused',
  });
}

const request = (
  tool: string,
  pinned: RunPins,
  principal: ToolCallRequest['principal'] = { kind: 'user', id: 'alice' },
): ToolCallRequest => ({
  run_id: 'run_1',
  op_id: 'run_1/op/1',
  tool,
  args: {},
  principal,
  attempt: 1,
  mutating: false,
  replay_safe: true,
  pinned,
});

describe('the catalogue tool host', () => {
  it('decides each call by the catalogue version its run pinned, and lists the current one without targets', async () => {
    const store = createMemoryRegistryStore();
    await publish(store, 'tools', 'lookup', '1.0.0', tool('lookup', '1.0.0'));
    await publish(store, 'tools', 'lookup', '2.0.0', tool('lookup', '2.0.0'));
    const tools = host(store);
    const at1 = await tools.gate(request('lookup', { catalogue: 1, policy: 0, agents: 0 }));
    const at2 = await tools.gate(request('lookup', { catalogue: 2, policy: 0, agents: 0 }));
    expect(at1).toMatchObject({ decision: 'require_approval', tool_version: '1.0.0' });
    expect(at2).toMatchObject({ decision: 'require_approval', tool_version: '2.0.0' });
    expect(await tools.gate(request('lookup', { catalogue: 0, policy: 0, agents: 0 }))).toEqual({
      decision: 'deny',
      code: 'tool_not_registered',
    });
    const listed = await tools.list();
    expect(listed.map((t) => `${t.name} ${t.version}`)).toEqual(['code_tool 0.1.0', 'lookup 2.0.0']);
    expect(JSON.stringify(listed)).not.toContain('arn:aws:lambda');
  });

  it('serves the code tools at every catalogue version and the code policy at policy version 0', async () => {
    const store = createMemoryRegistryStore();
    await publish(store, 'tools', 'blocked_in_code', '1.0.0', tool('blocked_in_code', '1.0.0', 'never'));
    await publish(store, 'policy', 'default', '1', { rules: [], default_effect: 'deny' });
    const tools = host(store);
    expect((await tools.gate(request('code_tool', { catalogue: 0, policy: 0, agents: 0 }))).decision).toBe(
      'allow',
    );
    expect((await tools.gate(request('code_tool', { catalogue: 1, policy: 0, agents: 0 }))).decision).toBe(
      'allow',
    );
    expect(await tools.gate(request('blocked_in_code', { catalogue: 1, policy: 0, agents: 0 }))).toEqual({
      decision: 'deny',
      code: 'code_rule',
    });
    // The published policy (default deny, no rules) replaces the code's rules for runs that pinned it.
    expect(await tools.gate(request('code_tool', { catalogue: 1, policy: 1, agents: 0 }))).toEqual({
      decision: 'deny',
      code: 'tool_not_allowed_by_policy',
    });
  });

  it('builds the host of a pin triple once, and does not keep a build the store failed', async () => {
    const { store, counts } = countingStore(createMemoryRegistryStore());
    await publish(store, 'tools', 'lookup', '1.0.0', tool('lookup', '1.0.0'));
    const tools = host(store);
    const pins = { catalogue: 1, policy: 0, agents: 0 };
    counts.failNext = true;
    await expect(tools.gate(request('lookup', pins))).rejects.toThrow('store unreachable');
    expect((await tools.gate(request('lookup', pins))).decision).toBe('require_approval');
    const readsAfterBuild = counts.reads;
    for (let i = 0; i < 5; i += 1) await tools.gate(request('lookup', pins));
    expect(counts.reads).toBe(readsAfterBuild);
  });

  it('narrows an agent to its registered tools and denies an agent the pinned registry does not know', async () => {
    const store = createMemoryRegistryStore();
    await publish(store, 'tools', 'lookup', '1.0.0', tool('lookup', '1.0.0', 'never'));
    await publish(store, 'agents', 'bot', '1', {
      agent_id: 'bot',
      acts_for: { users: ['alice'], groups: [] },
      tools: [],
    });
    const tools = host(store);
    const bot = { kind: 'agent' as const, id: 'bot', on_behalf_of: 'alice' };
    expect(await tools.gate(request('lookup', { catalogue: 1, policy: 0, agents: 1 }, bot))).toEqual({
      decision: 'deny',
      code: 'agent_tool_not_allowed',
    });
    expect(await tools.gate(request('lookup', { catalogue: 1, policy: 0, agents: 0 }, bot))).toEqual({
      decision: 'deny',
      code: 'agent_not_registered',
    });
  });

  it('refuses to publish a code tool name or a schema that does not compile', async () => {
    const tools = host(createMemoryRegistryStore());
    const check = tools.checkEntry;
    if (check === undefined) throw new Error('the catalogue host checks entries');
    expect(await check(tool('code_tool', '1.0.0') as never)).toMatchObject({
      code: 'tool_name_reserved',
      path: 'name',
    });
    expect(await check({ ...tool('x', '1.0.0'), input_schema: { type: 'nope' } } as never)).toMatchObject({
      code: 'validation_failed',
      path: 'input_schema',
    });
    expect(await check(tool('fine', '1.0.0') as never)).toBeNull();
  });
});
