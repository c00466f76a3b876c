/**
 * The AI SDK language model of one AGENT_RUNS_MODELS entry (ai-sdk-config.ts): the provider
 * packages, imported by ai-sdk-config.ts on the entry's first turn only, so a process that runs
 * no model turn never loads them. Does no I/O until the model is called.
 */
import { createAmazonBedrock } from '@ai-sdk/amazon-bedrock';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { ENV } from '../config.ts';
import { type AiSdkModelEntry, type AiSdkModelsOptions, DEFAULT_KEY_ENV } from './ai-sdk-entry.ts';
import { DEFAULT_API_KEY_MAX_AGE_SECONDS, secretApiKey } from './api-key.ts';

/**
 * A fetch that sets the API key header on each request from `key()` (a cached secret read or an
 * environment variable read at call time), so a rotated key is picked up without a restart.
 */
function keyedFetch(
  base: typeof fetch,
  header: 'authorization' | 'x-api-key' | 'x-goog-api-key',
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

/** The provider's language model for `entry`; its API key is read per request (keyedFetch). */
export function languageModelOf(entry: AiSdkModelEntry, options: AiSdkModelsOptions): LanguageModelV4 {
  const base = options.fetch ?? ((url, init) => fetch(url, init));
  const baseURL = entry.base_url !== undefined ? { baseURL: entry.base_url.replace(/\/+$/, '') } : {};
  if (entry.provider === 'amazon-bedrock') {
    const region = entry.region ?? options.env[ENV.AWS_REGION] ?? options.env[ENV.AWS_DEFAULT_REGION];
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
    case 'google':
      // The transcript keeps no thought signatures, so the provider replays a Gemini 3 model's
      // function calls with Google's documented `skip_thought_signature_validator` sentinel.
      return createGoogleGenerativeAI({
        ...baseURL,
        ...placeholder,
        fetch: keyedFetch(base, 'x-goog-api-key', key),
      })(entry.model);
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
