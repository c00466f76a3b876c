/**
 * API keys by secret reference: a Secrets Manager secret read through Powertools Parameters on
 * the first model turn and cached (`maxAge` seconds). The secret is the key itself, or a JSON
 * object with an `api_key` field. Used by configured.ts (OPENAI_API_KEY_SECRET) and
 * ai-sdk-config.ts (`api_key_secret`).
 */
import { ENV } from '../config.ts';
import { ModelConfigError, ModelsModuleError } from './errors.ts';

/** How long a secret API key is cached, in seconds, unless OPENAI_API_KEY_MAX_AGE_SECONDS says otherwise. */
export const DEFAULT_API_KEY_MAX_AGE_SECONDS = 300;

/** Reads one secret (a cached read; Powertools' SecretsProvider fits). */
export interface SecretReader {
  get(name: string, options: { maxAge: number }): Promise<unknown>;
}

/** Secrets Manager errors that another attempt will not cure. */
const PERMANENT_SECRET_ERRORS = new Set([
  'ResourceNotFoundException',
  'AccessDeniedException',
  'DecryptionFailure',
  'InvalidRequestException',
  'InvalidParameterException',
]);

/** An error reading the API key; `retryable` tells the model adapter how to classify the turn. */
export class ApiKeyUnavailable extends ModelsModuleError {
  override name = 'ApiKeyUnavailable';
  readonly code = 'api_key_unavailable';
  readonly retryable: boolean;
  constructor(message: string, retryable: boolean, options?: ErrorOptions) {
    super(message, options);
    this.retryable = retryable;
  }
}

/** A key provider over a cached secret read: the secret string, or its JSON `api_key` field. */
export function secretApiKey(secretId: string, maxAge: number, secrets: SecretReader): () => Promise<string> {
  return async () => {
    let raw: unknown;
    try {
      raw = await secrets.get(secretId, { maxAge });
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
      const name = cause instanceof Error ? cause.name : 'Error';
      const message = cause instanceof Error ? cause.message : String(cause);
      throw new ApiKeyUnavailable(
        `secret ${secretId}: ${name}: ${message}`,
        !PERMANENT_SECRET_ERRORS.has(name),
        {
          cause: error,
        },
      );
    }
    const key = apiKeyOf(raw);
    if (key === undefined) {
      throw new ApiKeyUnavailable(
        `secret ${secretId} holds no API key (a string, or JSON with api_key)`,
        false,
      );
    }
    return key;
  };
}

function apiKeyOf(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const text = raw.trim();
  if (text.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(text);
      const field = (parsed as { api_key?: unknown } | null)?.api_key;
      return typeof field === 'string' && field !== '' ? field : undefined;
    } catch {
      return undefined;
    }
  }
  return text === '' ? undefined : text;
}

/** Parses a max age in seconds (default when absent); throws ModelConfigError naming `variable`. */
export function maxAgeOf(text: string | undefined, variable = ENV.OPENAI_API_KEY_MAX_AGE_SECONDS): number {
  if (text === undefined) return DEFAULT_API_KEY_MAX_AGE_SECONDS;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    throw new ModelConfigError(variable, `not a whole number of seconds: ${text}`);
  }
  return n;
}
