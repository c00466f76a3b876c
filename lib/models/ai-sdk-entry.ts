/**
 * One entry of AGENT_RUNS_MODELS, its schema and the options of building its model: shared by
 * ai-sdk-config.ts (which parses entries and builds the model-turn functions) and
 * ai-sdk-providers.ts (the provider packages, imported on an entry's first turn), so neither
 * imports the other. See ai-sdk-config.ts for the fields.
 */
import { z } from 'zod';
import { ENV } from '../config.ts';
import type { SecretReader } from './api-key.ts';

export const AI_SDK_PROVIDERS = [
  'amazon-bedrock',
  'anthropic',
  'google',
  'openai',
  'openai-compatible',
] as const;
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

export interface AiSdkModelsOptions {
  env: NodeJS.ProcessEnv;
  /** Where secrets are read (api_key_secret). */
  secrets: () => SecretReader;
  /** The fetch providers use (default global fetch). */
  fetch?: typeof fetch | undefined;
}

/** The environment variable each provider reads its API key from when an entry names none. */
export const DEFAULT_KEY_ENV: Record<Exclude<AiSdkProvider, 'amazon-bedrock'>, string | undefined> = {
  anthropic: ENV.ANTHROPIC_API_KEY,
  google: ENV.GOOGLE_GENERATIVE_AI_API_KEY,
  openai: ENV.OPENAI_API_KEY,
  'openai-compatible': undefined,
};
