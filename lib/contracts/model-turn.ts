/**
 * The model-turn function contract: input, success output, error output.
 * docs/contracts/model-turn.md.
 */
import { z } from 'zod';
import { JsonObject, Subject, TokenCount } from './common.ts';
import { TokenUsage, ToolCall, ToolOffered, ToolResultRef } from './reducer.ts';

/** The function used when a run sets no `executor_config.model_turn_function`. */
export const DEFAULT_MODEL_TURN_FUNCTION = '/lib/raisin/ai/agent-run-model-turn';

export const ModelTurnInput = z.object({
  run_id: z.string(),
  operation_id: z.string(),
  attempt: z.number().int().positive(),
  agent_ref: z.string().optional(),
  subject: Subject,
  executor_config: JsonObject.default({}),
  request: z.object({
    tools_offered: z.array(ToolOffered).default([]),
    instructions: z.string().optional(),
    tool_results: z.array(ToolResultRef).default([]),
    output_schema: z.unknown().optional(),
    context: z.unknown().optional(),
  }),
});
export type ModelTurnInput = z.infer<typeof ModelTurnInput>;

export const ModelTurnOutput = z.object({
  message: z.object({ text: z.string().nullable().optional() }),
  tool_calls: z.array(ToolCall).default([]),
  finish_reason: z.string(),
  usage: TokenUsage,
});
export type ModelTurnOutput = z.infer<typeof ModelTurnOutput>;

export const ModelTurnError = z.object({
  error_class: z.string().min(1),
  message: z.string(),
  retryable: z.boolean().optional(),
});
export type ModelTurnError = z.infer<typeof ModelTurnError>;

/** Usage counters reported by a model call. */
export const ModelUsage = z.object({ input_tokens: TokenCount, output_tokens: TokenCount });
