/**
 * AI SDK models configured as data: `AGENT_RUNS_MODELS` is a JSON array, one entry per
 * model-turn function, each served by an AI SDK provider package through ai-sdk.ts.
 *
 * An entry: `{provider, model, path?, base_url?, region?, api_key_secret?, api_key_env?,
 * timeout_ms?, settings?}`.
 * - `provider`: `amazon-bedrock` (Converse; AWS credentials from the SDK's default chain,
 *   `region` or AWS_REGION), `anthropic` (Messages API), `google` (Gemini API
 *   generateContent), `openai` (chat completions),
 *   `openai-compatible` (chat completions at `base_url`: Ollama, vLLM, LiteLLM; `base_url` required).
 * - `model`: the provider's model id. `path`: where it is served (default
 *   `/lib/models/{provider}/{model}`). `base_url`: the provider's endpoint (default the
 *   provider's own; a local stand-in in tests).
 * - The API key (not for amazon-bedrock) by reference only: `api_key_secret` (a Secrets Manager
 *   secret name or ARN, read on the first turn and cached; see api-key.ts) or `api_key_env` (the
 *   name of an environment variable; default the provider's own, e.g. ANTHROPIC_API_KEY,
 *   GOOGLE_GENERATIVE_AI_API_KEY).
 * - `settings`: call settings (`max_output_tokens`, `temperature`, `top_p`, `top_k`,
 *   `stop_sequences`, `seed`). `timeout_ms`: the per-call deadline.
 *
 * Errors: ModelConfigError (code `model_config_invalid`, variable `AGENT_RUNS_MODELS`, the
 * message naming the entry and field) for JSON that is not such an array; no I/O.
 * The provider packages are imported on an entry's first turn (ai-sdk-providers.ts, lazy.ts).
 */
import { z } from 'zod';
import { ENV } from '../config.ts';
import {
  AiSdkModelEntry,
  type AiSdkModelsOptions,
  type AiSdkProvider,
  DEFAULT_KEY_ENV,
} from './ai-sdk-entry.ts';
import { ModelConfigError } from './errors.ts';
import { lazyModelTurn } from './lazy.ts';
import type { ModelTurnFunction } from './types.ts';

export {
  AI_SDK_PROVIDERS,
  AiSdkModelEntry,
  type AiSdkModelsOptions,
  type AiSdkProvider,
} from './ai-sdk-entry.ts';

/** What one configured entry is, as the start banner shows it. */
export interface AiSdkConfiguredModel {
  path: string;
  provider: AiSdkProvider;
  model: string;
  /** `secret <id>`, `environment <NAME>`, or `aws` for Bedrock. */
  key: string;
}

/** Parses AGENT_RUNS_MODELS (text) into entries. Throws ModelConfigError naming the entry and field. */
export function parseAiSdkModels(text: string): AiSdkModelEntry[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ModelConfigError(ENV.AGENT_RUNS_MODELS, `not JSON: ${(error as Error).message}`);
  }
  const parsed = z.array(AiSdkModelEntry).safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) =>
      `[${i.path.map(String).join('].')}: ${i.message}`.replace(/^\[(\d+)\]\./, '[$1].'),
    );
    throw new ModelConfigError(ENV.AGENT_RUNS_MODELS, issues.join('; '));
  }
  const paths = new Set<string>();
  for (const [i, entry] of parsed.data.entries()) {
    const path = pathOf(entry);
    if (paths.has(path))
      throw new ModelConfigError(ENV.AGENT_RUNS_MODELS, `[${i}].path: ${path} is configured twice`);
    paths.add(path);
  }
  return parsed.data;
}

/** Where an entry is served. */
export function pathOf(entry: AiSdkModelEntry): string {
  return entry.path ?? `/lib/models/${entry.provider}/${entry.model}`;
}

/** The model-turn functions of AGENT_RUNS_MODELS entries, by path. Does no I/O. */
export function aiSdkModels(
  entries: readonly AiSdkModelEntry[],
  options: AiSdkModelsOptions,
): { functions: Record<string, ModelTurnFunction>; models: AiSdkConfiguredModel[] } {
  const functions: Record<string, ModelTurnFunction> = {};
  const models: AiSdkConfiguredModel[] = [];
  for (const entry of entries) {
    const path = pathOf(entry);
    const s = entry.settings ?? {};
    const settings = {
      ...(s.max_output_tokens !== undefined && { maxOutputTokens: s.max_output_tokens }),
      ...(s.temperature !== undefined && { temperature: s.temperature }),
      ...(s.top_p !== undefined && { topP: s.top_p }),
      ...(s.top_k !== undefined && { topK: s.top_k }),
      ...(s.stop_sequences !== undefined && { stopSequences: s.stop_sequences }),
      ...(s.seed !== undefined && { seed: s.seed }),
    };
    // The provider packages are imported on the first turn (lazy.ts).
    functions[path] = lazyModelTurn(async () => {
      const [{ languageModelOf }, { createAiSdkModel }] = await Promise.all([
        import('./ai-sdk-providers.ts'),
        import('./ai-sdk.ts'),
      ]);
      return createAiSdkModel({
        model: languageModelOf(entry, options),
        timeoutMs: entry.timeout_ms,
        settings,
      });
    });
    models.push({ path, provider: entry.provider, model: entry.model, key: keyOf(entry) });
  }
  return { functions, models };
}

function keyOf(entry: AiSdkModelEntry): string {
  if (entry.provider === 'amazon-bedrock') return 'aws';
  if (entry.api_key_secret !== undefined) return `secret ${entry.api_key_secret}`;
  const name = entry.api_key_env ?? DEFAULT_KEY_ENV[entry.provider];
  return name === undefined ? 'none' : `environment ${name}`;
}
