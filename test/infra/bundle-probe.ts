/**
 * A Lambda entry point used only by test/infra/stack.test.ts: bundled with the stack's own
 * bundling options, it exercises what a bundle needs at run time beyond its code (the agent
 * reducer artifact read beside the module, the QuickJS WebAssembly module, the Starlark runtime
 * and its Go glue, `require` in ESM). Returns the artifact hash the registry computed, the kind
 * of the reducer call's result and what a small Starlark reducer answered.
 */
import { AGENT_LOOP_PATH, readAgentLoopSource } from '../../lib/reducers/index.ts';
import { createSandboxReducerHost, InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';

export async function handler(): Promise<{
  artifact_hash: string | null;
  result_kind: string;
  reason?: string;
  starlark: unknown;
}> {
  const starlarkSource = 'def reduce(request):\n    return {"seen": request["n"] + 1}\n';
  const registry = new InMemoryFunctionRegistry([
    { function_path: AGENT_LOOP_PATH, kind: 'js', bytes: new TextEncoder().encode(readAgentLoopSource()) },
    { function_path: '/lib/probe/starlark', kind: 'star', bytes: new TextEncoder().encode(starlarkSource) },
  ]);
  // A generous CPU bound: this checks packaging, not speed, and test machines may be loaded.
  const host = createSandboxReducerHost({ registry, limits: { timeoutMs: 10_000 } });
  const binding = { function_path: AGENT_LOOP_PATH };
  const resolved = await host.resolve(binding);
  const result = await host.reduce(binding, { contract: 'not-a-reducer-request' });
  const starlark = await host.reduce({ function_path: '/lib/probe/starlark' }, { n: 41 });
  await host.close();
  return {
    starlark: starlark.kind === 'answered' ? starlark.response : starlark,
    artifact_hash: resolved?.artifact_hash ?? null,
    result_kind: result.kind,
    ...(result.kind === 'unavailable' ? { reason: result.reason } : {}),
  };
}
