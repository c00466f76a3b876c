/**
 * The model-turn functions a deployment configures through its environment: the CDK stack sets
 * these variables on the step function (cdk/stack.ts, `models`), the local stack inherits them
 * from the shell, and the runtime reads them once per container (lib/runtime.ts).
 *
 * Variables:
 * - `BEDROCK_MODEL_ID`: one or more Bedrock model or inference-profile ids, comma-separated.
 *   Each is served at `/lib/models/bedrock/{id}`; the first also at `/lib/models/bedrock`.
 *   `BEDROCK_REGION` overrides the SDK's region; the endpoint follows the SDK's own settings
 *   (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME` points it at a local stand-in).
 * - `OPENAI_BASE_URL` + `OPENAI_MODEL`: an OpenAI-compatible endpoint at `/lib/models/openai`.
 *   Its key is `OPENAI_API_KEY` (local use) or, in AWS, `OPENAI_API_KEY_SECRET`: the name or
 *   ARN of a Secrets Manager secret read through Powertools Parameters on the first model turn
 *   and cached for OPENAI_API_KEY_MAX_AGE_SECONDS (default 300). The secret is the key itself,
 *   or a JSON object with an `api_key` field.
 * - `AGENT_RUNS_DEFAULT_MODEL`: `bedrock`, `openai` or a path above: the function a run gets
 *   when it names none (default: Bedrock when configured, else OpenAI). The default is also
 *   served at the contract's default path.
 *
 * A run chooses among the configured functions with `executor_config.model_turn_function`
 * (seed agent-run-contracts, "The model-turn function"); an unknown path ends its turn with
 * `model_turn_function_not_found` (lib/models/host.ts).
 *
 * Errors: `modelsFromEnv` throws ModelConfigError (code `model_config_invalid`, `variable`
 * naming the offending variable) for a half or contradictory configuration, so a container
 * with a wrong environment fails at start, not at its first turn.
 */
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../contracts/index.ts';
import { createBedrockModel } from './bedrock.ts';
import { ModelsModuleError } from './errors.ts';
import { createOpenAiCompatibleModel } from './openai-compatible.ts';
import type { ModelTurnFunction } from './types.ts';

/** Where the configured providers are served. */
export const MODEL_PATHS = { bedrock: '/lib/models/bedrock', openai: '/lib/models/openai' } as const;

/** How long a secret API key is cached, in seconds, unless OPENAI_API_KEY_MAX_AGE_SECONDS says otherwise. */
export const DEFAULT_API_KEY_MAX_AGE_SECONDS = 300;

/** One configured model-turn function, as the start banner and the tests describe it. */
export interface ConfiguredModel {
  path: string;
  provider: 'bedrock' | 'openai-compatible';
  /** The provider's model id. */
  model: string;
  /** Where the API key comes from (OpenAI-compatible only): `secret <id>`, `environment` or `none`. */
  key?: string;
}

export interface ConfiguredModels {
  /** Functions by path, the default one also at the contract's default path. */
  functions: Record<string, ModelTurnFunction>;
  /** What is configured, one entry per path (without the default-path alias). */
  models: ConfiguredModel[];
  /** The path a run gets when it names none; undefined when nothing is configured. */
  defaultPath: string | undefined;
}

/** A configuration the environment cannot mean: names the variable. */
export class ModelConfigError extends ModelsModuleError {
  override name = 'ModelConfigError';
  readonly code = 'model_config_invalid';
  readonly retryable = false;
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.variable = variable;
  }
}

/** Reads one secret (a cached read; Powertools' SecretsProvider fits). */
export interface SecretReader {
  get(name: string, options: { maxAge: number }): Promise<unknown>;
}

export interface ModelsFromEnvOptions {
  /** Where secrets are read (default: a Powertools SecretsProvider with the SDK's defaults). */
  secrets?: SecretReader;
}

const BEDROCK_ID = /^[A-Za-z0-9][A-Za-z0-9.:/_-]*$/;

/** The model-turn functions the environment configures. Does no I/O. Throws ModelConfigError. */
export function modelsFromEnv(env: NodeJS.ProcessEnv, options: ModelsFromEnvOptions = {}): ConfiguredModels {
  const value = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const functions: Record<string, ModelTurnFunction> = {};
  const models: ConfiguredModel[] = [];

  const bedrockIds = (value('BEDROCK_MODEL_ID') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const region = value('BEDROCK_REGION');
  for (const [i, modelId] of bedrockIds.entries()) {
    if (!BEDROCK_ID.test(modelId)) {
      throw new ModelConfigError('BEDROCK_MODEL_ID', `not a model id: ${JSON.stringify(modelId)}`);
    }
    const fn = createBedrockModel({ modelId, ...(region !== undefined ? { region } : {}) });
    const paths = [`${MODEL_PATHS.bedrock}/${modelId}`, ...(i === 0 ? [MODEL_PATHS.bedrock] : [])];
    for (const path of paths) {
      functions[path] = fn;
      models.push({ path, provider: 'bedrock', model: modelId });
    }
  }

  const baseUrl = value('OPENAI_BASE_URL');
  const model = value('OPENAI_MODEL');
  if ((baseUrl === undefined) !== (model === undefined)) {
    const missing = baseUrl === undefined ? 'OPENAI_BASE_URL' : 'OPENAI_MODEL';
    throw new ModelConfigError(missing, 'OPENAI_BASE_URL and OPENAI_MODEL go together');
  }
  if (baseUrl !== undefined && model !== undefined) {
    if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
      throw new ModelConfigError('OPENAI_BASE_URL', `not an http(s) URL: ${baseUrl}`);
    }
    const plainKey = value('OPENAI_API_KEY');
    const secretId = value('OPENAI_API_KEY_SECRET');
    if (plainKey !== undefined && secretId !== undefined) {
      throw new ModelConfigError(
        'OPENAI_API_KEY_SECRET',
        'give OPENAI_API_KEY or OPENAI_API_KEY_SECRET, not both',
      );
    }
    const maxAge = maxAgeOf(value('OPENAI_API_KEY_MAX_AGE_SECONDS'));
    const apiKey =
      secretId !== undefined
        ? secretApiKey(secretId, maxAge, options.secrets ?? new SecretsProvider())
        : plainKey;
    functions[MODEL_PATHS.openai] = createOpenAiCompatibleModel({
      baseUrl,
      model,
      ...(apiKey !== undefined ? { apiKey } : {}),
    });
    models.push({
      path: MODEL_PATHS.openai,
      provider: 'openai-compatible',
      model,
      key: secretId !== undefined ? `secret ${secretId}` : plainKey !== undefined ? 'environment' : 'none',
    });
  }

  const defaultPath = defaultPathOf(value('AGENT_RUNS_DEFAULT_MODEL'), functions);
  if (defaultPath !== undefined) {
    const fn = functions[defaultPath];
    if (fn !== undefined) functions[DEFAULT_MODEL_TURN_FUNCTION] = fn;
  }
  return { functions, models, defaultPath };
}

function defaultPathOf(
  chosen: string | undefined,
  functions: Record<string, ModelTurnFunction>,
): string | undefined {
  if (chosen === undefined) {
    if (MODEL_PATHS.bedrock in functions) return MODEL_PATHS.bedrock;
    return MODEL_PATHS.openai in functions ? MODEL_PATHS.openai : undefined;
  }
  const path = chosen === 'bedrock' || chosen === 'openai' ? MODEL_PATHS[chosen] : chosen;
  if (!(path in functions)) {
    const known = Object.keys(functions);
    throw new ModelConfigError(
      'AGENT_RUNS_DEFAULT_MODEL',
      `${chosen} is not configured (configured: ${known.length > 0 ? known.join(', ') : 'none'})`,
    );
  }
  return path;
}

function maxAgeOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_API_KEY_MAX_AGE_SECONDS;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    throw new ModelConfigError('OPENAI_API_KEY_MAX_AGE_SECONDS', `not a whole number of seconds: ${text}`);
  }
  return n;
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
function secretApiKey(secretId: string, maxAge: number, secrets: SecretReader): () => Promise<string> {
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
