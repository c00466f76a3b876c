/**
 * A Lambda entry point used only by test/infra/stack.test.ts: bundled with the stack's own
 * bundling options, it exercises what a bundle needs at run time beyond its code (the agent
 * reducer artifact read beside the module, the QuickJS WebAssembly module, `require` in ESM).
 * Returns the artifact hash the registry computed and the kind of the reducer call's result.
 */
import { AGENT_LOOP_PATH, readAgentLoopSource } from '../../lib/reducers/index.ts';
import { createSandboxReducerHost, InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';

export async function handler(): Promise<{
  artifact_hash: string | null;
  result_kind: string;
  reason?: string;
}> {
  const registry = new InMemoryFunctionRegistry([
    { function_path: AGENT_LOOP_PATH, kind: 'js', bytes: new TextEncoder().encode(readAgentLoopSource()) },
  ]);
  // A generous CPU bound: this checks packaging, not speed, and test machines may be loaded.
  const host = createSandboxReducerHost({ registry, limits: { timeoutMs: 10_000 } });
  const binding = { function_path: AGENT_LOOP_PATH };
  const resolved = await host.resolve(binding);
  const result = await host.reduce(binding, { contract: 'not-a-reducer-request' });
  return {
    artifact_hash: resolved?.artifact_hash ?? null,
    result_kind: result.kind,
    ...(result.kind === 'unavailable' ? { reason: result.reason } : {}),
  };
}
