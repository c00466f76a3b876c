/**
 * Registers tools written in the OpenAI function-calling format
 * (`[{type: "function", function: {name, description?, parameters?}}]`, as in tau-bench's
 * tools.json): the function's `parameters` become the input schema. docs/contracts/tool-result.md,
 * "Tool registration".
 */
import { z } from 'zod';
import { ToolRegistrationError } from './errors.ts';
import type { ToolHandler } from './handler-types.ts';
import type { ToolMetadataInput, ToolRegistry } from './registry.ts';

export const OpenAiFunctionTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string(),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type OpenAiFunctionTool = z.infer<typeof OpenAiFunctionTool>;

/** What the application supplies for one function: its handler, metadata and (default 1.0.0) version. */
export interface OpenAiToolBinding {
  handler: ToolHandler;
  metadata: ToolMetadataInput;
  version?: string;
}

/**
 * Registers every function of `toolsJson` (parsed JSON, checked with zod) with the binding
 * `handlerFor` returns for it; a function without `parameters` takes `{type: "object"}`.
 * Returns the registered names in file order. Throws ToolRegistrationError: invalid_definition
 * when `toolsJson` is not an array of function tools, otherwise whatever `register` throws (the
 * tools before the failing one stay registered).
 */
export function registerOpenAiFunctionTools(
  registry: ToolRegistry,
  toolsJson: unknown,
  handlerFor: (fn: OpenAiFunctionTool['function']) => OpenAiToolBinding,
): string[] {
  const parsed = z.array(OpenAiFunctionTool).safeParse(toolsJson);
  if (!parsed.success) {
    throw new ToolRegistrationError(
      'invalid_definition',
      '',
      'toolsJson must be an array of OpenAI function tools',
      {
        cause: parsed.error,
      },
    );
  }
  return parsed.data.map(({ function: fn }) => {
    const binding = handlerFor(fn);
    registry.register({
      name: fn.name,
      version: binding.version ?? '1.0.0',
      ...(fn.description === undefined ? {} : { description: fn.description }),
      input_schema: fn.parameters ?? { type: 'object' },
      handler: binding.handler,
      metadata: binding.metadata,
    });
    return fn.name;
  });
}
