/** The tools `npm start` registers for a new local stack (lib/local/sample-tools.ts). */
import { describe, expect, it } from 'vitest';
import { registerSampleTools } from '../../lib/local/sample-tools.ts';
import {
  createAuditLog,
  createPolicyGate,
  createToolHost,
  createToolRegistry,
} from '../../lib/tools/index.ts';

function host() {
  const registry = createToolRegistry();
  registerSampleTools(registry);
  return createToolHost({
    registry,
    gate: createPolicyGate([]),
    audit: createAuditLog(() => {}, { clock: { now: () => 0 } }),
  });
}

const request = (tool: string, args: Record<string, unknown>) => ({
  run_id: 'run-1',
  op_id: 'run-1/op/3',
  tool,
  args,
  principal: { kind: 'user' as const, id: 'alice' },
  attempt: 1,
  mutating: false,
  replay_safe: true,
});

describe('sample tools of the local stack', () => {
  it('echo answers with its args, without the runtime context', async () => {
    const out = await host().execute(request('echo', { city: 'Oslo' }), new AbortController().signal);
    expect(out).toMatchObject({ status: 'succeeded', payload: { echo: { city: 'Oslo' } } });
  });

  it('answer in the standard result shape, so the runtime wraps neither as legacy', async () => {
    for (const tool of ['echo', 'wait_for_callback']) {
      const out = await host().execute(request(tool, { city: 'Oslo' }), new AbortController().signal);
      expect(out).toMatchObject({ envelope: 'raisin.tool-result/1', operation_id: 'run-1/op/3' });
      expect(out).not.toHaveProperty('legacy');
    }
  });

  it('wait_for_callback parks the call on callback:{operation_id}', async () => {
    const out = await host().execute(request('wait_for_callback', {}), new AbortController().signal);
    expect(out).toMatchObject({ status: 'waiting', resume_key: 'callback:run-1/op/3' });
  });
});
