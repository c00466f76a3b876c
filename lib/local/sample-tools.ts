/**
 * Two tools `npm start` registers so that a new local stack has something to call:
 * - `echo` (read-only, replay-safe): answers a succeeded `raisin.tool-result/1` envelope whose
 *   payload is `{echo: args}` (it reads and writes nothing, so it claims nothing);
 * - `wait_for_callback` (read-only, replay-safe): parks the call (`waiting`) under the resume key
 *   `callback:{operation_id}`; deliver its result with `agent-runs deliver callback:... '{...}'`
 *   or `POST /results/{resume_key}`.
 * Both answer in the standard envelope (docs/contracts/tool-result.md), so neither result is
 * wrapped `legacy`. A deployment registers its own tools instead (`registerTools` of lib/runtime.ts).
 */
import { envelopeOf } from '../core/tool-result-validation.ts';
import type { ToolRegistry } from '../tools/registry.ts';

export function registerSampleTools(registry: ToolRegistry): void {
  registry.register({
    name: 'echo',
    version: '1.0.0',
    description: 'Answers with the arguments it was given.',
    input_schema: { type: 'object' },
    handler: {
      kind: 'module',
      fn: async (args) => {
        const { __raisin_context: _context, ...rest } = args;
        return envelopeOf('succeeded', { echo: rest });
      },
    },
    metadata: { mutating: false, replay_safe: true },
  });
  registry.register({
    name: 'wait_for_callback',
    version: '1.0.0',
    description: 'Waits until a result is delivered for resume key callback:{operation_id}.',
    input_schema: { type: 'object' },
    handler: {
      kind: 'module',
      fn: async (_args, ctx) =>
        envelopeOf('waiting', undefined, { resume_key: `callback:${ctx.operation_id}` }),
    },
    metadata: { mutating: false, replay_safe: true },
  });
}
