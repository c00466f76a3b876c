/**
 * AI SDK models configured as data: `AGENT_RUNS_MODELS` is a JSON array, one entry per
 * model-turn function, each served by an AI SDK provider package through ai-sdk.ts.
 *
 * An entry: `{provider, model, path?, base_url?, region?, api_key_secret?, api_key_env?,
 * timeout_ms?, settings?}`.
 * - `provider`: `amazon-bedrock` (Converse; AWS credentials from the SDK's default chain,
 *   `region` or AWS_REGION), `anthropic` (Messages API), `openai` (chat completions),
 *   `openai-compatible` (chat completions at `base_url`: Ollama, vLLM, LiteLLM; `base_url` required).
 * - `model`: the provider's model id. `path`: where it is served (default
 *   `/lib/models/{provider}/{model}`). `base_url`: the provider's endpoint (default the
 *   provider's own; a local stand-in in tests).
 * - The API key (not for amazon-bedrock) by reference only: `api_key_secret` (a Secrets Manager
 *   secret name or ARN, read on the first turn and cached; see api-key.ts) or `api_key_env` (the
 *   name of an environment variable; default the provider's own, e.g. ANTHROPIC_API_KEY).
 * - `settings`: call settings (`max_output_tokens`, `temperature`, `top_p`, `top_k`,
 *   `stop_sequences`, `seed`). `timeout_ms`: the per-call deadline.
 *
 * Errors: ModelConfigError (code `model_config_invalid`, variable `AGENT_RUNS_MODELS`, the
 * message naming the entry and field) for JSON that is not such an array; no I/O.
 * Issue 28 point 1.
 */
import { createAmazonBedrock } from '@ai-sdk/amazon-bedrock';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { z } from 'zod';
import { createAiSdkModel } from './ai-sdk.ts';
import { DEFAULT_API_KEY_MAX_AGE_SECONDS, type SecretReader, secretApiKey } from './api-key.ts';
import { ModelConfigError } from './errors.ts';
import type { ModelTurnFunction } from './types.ts';

export const AI_SDK_PROVIDERS = ['amazon-bedrock', 'anthropic', 'openai', 'openai-compatible'] as const;
export type AiSdkProvider = (typeof AI_SDK_PROVIDERS)[number];

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One entry of AGENT_RUNS_MODELS (see the module docstring). */
export const AiSdkModelEntry = z
  .strictObject({
    provider: z.enum(AI_SDK_PROVIDERS),
    model: z.string().min(1).max(256),
    path: z
      .string()
      .regex(/^\/[^\s]*$/, 'a path starting with /')
      .optional(),
    base_url: z.url({ protocol: /^https?$/ }).optional(),
    region: z.string().min(1).optional(),
    api_key_secret: z.string().min(1).optional(),
    api_key_env: z.string().regex(ENV_NAME, 'an environment variable name').optional(),
    timeout_ms: z.number().int().positive().optional(),
    settings: z
      .strictObject({
        max_output_tokens: z.number().int().positive().optional(),
        temperature: z.number().optional(),
        top_p: z.number().optional(),
        top_k: z.number().int().optional(),
        stop_sequences: z.array(z.string()).optional(),
        seed: z.number().int().optional(),
      })
      .optional(),
  })
  .superRefine((entry, ctx) => {
    if (entry.provider === 'openai-compatible' && entry.base_url === undefined) {
      ctx.addIssue({ code: 'custom', path: ['base_url'], message: 'openai-compatible needs base_url' });
    }
    if (entry.api_key_secret !== undefined && entry.api_key_env !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['api_key_secret'],
        message: 'give api_key_secret or api_key_env, not both',
      });
    }
    if (entry.provider === 'amazon-bedrock' && (entry.api_key_secret ?? entry.api_key_env) !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['api_key_secret'],
        message: 'amazon-bedrock uses AWS credentials, not an API key',
      });
    }
  });
export type AiSdkModelEntry = z.infer<typeof AiSdkModelEntry>;

/** What one configured entry is, as the start banner shows it. */
export interface AiSdkConfiguredModel {
  path: string;
  provider: AiSdkProvider;
  model: string;
  /** `secret <id>`, `environment <NAME>`, or `aws` for Bedrock. */
  key: string;
}

export interface AiSdkModelsOptions {
  env: NodeJS.ProcessEnv;
  /** Where secrets are read (api_key_secret). */
  secrets: () => SecretReader;
  /** The fetch providers use (default global fetch). */
  fetch?: typeof fetch | undefined;
}

/** Parses AGENT_RUNS_MODELS (text) into entries. Throws ModelConfigError naming the entry and field. */
export function parseAiSdkModels(text: string): AiSdkModelEntry[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ModelConfigError('AGENT_RUNS_MODELS', `not JSON: ${(error as Error).message}`);
  }
  const parsed = z.array(AiSdkModelEntry).safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) =>
      `[${i.path.map(String).join('].')}: ${i.message}`.replace(/^\[(\d+)\]\./, '[$1].'),
    );
    throw new ModelConfigError('AGENT_RUNS_MODELS', issues.join('; '));
  }
  const paths = new Set<string>();
  for (const [i, entry] of parsed.data.entries()) {
    const path = pathOf(entry);
    if (paths.has(path))
      throw new ModelConfigError('AGENT_RUNS_MODELS', `[${i}].path: ${path} is configured twice`);
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
    functions[path] = createAiSdkModel({
      model: languageModelOf(entry, options),
      timeoutMs: entry.timeout_ms,
      settings: {
        ...(s.max_output_tokens !== undefined && { maxOutputTokens: s.max_output_tokens }),
        ...(s.temperature !== undefined && { temperature: s.temperature }),
        ...(s.top_p !== undefined && { topP: s.top_p }),
        ...(s.top_k !== undefined && { topK: s.top_k }),
        ...(s.stop_sequences !== undefined && { stopSequences: s.stop_sequences }),
        ...(s.seed !== undefined && { seed: s.seed }),
      },
    });
    models.push({ path, provider: entry.provider, model: entry.model, key: keyOf(entry) });
  }
  return { functions, models };
}

const DEFAULT_KEY_ENV: Record<Exclude<AiSdkProvider, 'amazon-bedrock'>, string | undefined> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  'openai-compatible': undefined,
};

function keyOf(entry: AiSdkModelEntry): string {
  if (entry.provider === 'amazon-bedrock') return 'aws';
  if (entry.api_key_secret !== undefined) return `secret ${entry.api_key_secret}`;
  const name = entry.api_key_env ?? DEFAULT_KEY_ENV[entry.provider];
  return name === undefined ? 'none' : `environment ${name}`;
}

/**
 * A fetch that sets the API key header on each request from `key()` (a cached secret read or an
 * environment variable read at call time), so a rotated key is picked up without a restart.
 */
function keyedFetch(
  base: typeof fetch,
  header: 'authorization' | 'x-api-key',
  key: () => Promise<string | undefined>,
): typeof fetch {
  return async (url, init) => {
    const value = await key();
    const headers = new Headers(init?.headers);
    if (value !== undefined) headers.set(header, header === 'authorization' ? `Bearer ${value}` : value);
    else headers.delete(header);
    return base(url, { ...init, headers });
  };
}

function languageModelOf(entry: AiSdkModelEntry, options: AiSdkModelsOptions): LanguageModelV4 {
  const base = options.fetch ?? ((url, init) => fetch(url, init));
  const baseURL = entry.base_url !== undefined ? { baseURL: entry.base_url.replace(/\/+$/, '') } : {};
  if (entry.provider === 'amazon-bedrock') {
    const region = entry.region ?? options.env.AWS_REGION ?? options.env.AWS_DEFAULT_REGION;
    const credentials = defaultProvider();
    return createAmazonBedrock({
      ...baseURL,
      ...(region !== undefined && { region }),
      fetch: base,
      credentialProvider: async () => {
        const c = await credentials();
        return {
          accessKeyId: c.accessKeyId,
          secretAccessKey: c.secretAccessKey,
          ...(c.sessionToken !== undefined && { sessionToken: c.sessionToken }),
        };
      },
    })(entry.model);
  }
  const secretId = entry.api_key_secret;
  const envName = entry.api_key_env ?? DEFAULT_KEY_ENV[entry.provider];
  const key: () => Promise<string | undefined> =
    secretId !== undefined
      ? secretApiKey(secretId, DEFAULT_API_KEY_MAX_AGE_SECONDS, options.secrets())
      : async () => (envName !== undefined ? options.env[envName] : undefined);
  // The providers refuse to start without a key; the real one is set per request by keyedFetch.
  const placeholder = { apiKey: 'set-per-request' };
  switch (entry.provider) {
    case 'anthropic':
      return createAnthropic({ ...baseURL, ...placeholder, fetch: keyedFetch(base, 'x-api-key', key) })(
        entry.model,
      );
    case 'openai':
      return createOpenAI({ ...baseURL, ...placeholder, fetch: keyedFetch(base, 'authorization', key) }).chat(
        entry.model,
      );
    case 'openai-compatible':
      return createOpenAICompatible({
        name: 'openai-compatible',
        baseURL: baseURL.baseURL ?? '',
        includeUsage: true,
        fetch: keyedFetch(base, 'authorization', key),
      }).chatModel(entry.model);
  }
}
