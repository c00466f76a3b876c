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
 * - `AGENT_RUNS_MODELS`: AI SDK models as data, a JSON array of `{provider, model, path?,
 *   base_url?, api_key_secret?, ...}` (providers amazon-bedrock, anthropic, google, openai,
 *   openai-compatible; see ai-sdk-config.ts), each at its `path`.
 * - `AGENT_RUNS_DEFAULT_MODEL`: `bedrock`, `openai` or a path above: the function a run gets
 *   when it names none (default: Bedrock when configured, else OpenAI, else the first
 *   AGENT_RUNS_MODELS entry). The default is also
 *   served at the contract's default path.
 *
 * A run chooses among the configured functions with `executor_config.model_turn_function`
 * (docs/contracts/model-turn.md); an unknown path ends its turn with
 * `model_turn_function_not_found` (lib/models/host.ts).
 *
 * Errors: `modelsFromEnv` throws ModelConfigError (code `model_config_invalid`, `variable`
 * naming the offending variable) for a half or contradictory configuration, so a container
 * with a wrong environment fails at start, not at its first turn.
 */
import { ENV } from '../config.ts';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../contracts/index.ts';
import { type AiSdkProvider, aiSdkModels, parseAiSdkModels } from './ai-sdk-config.ts';
import { maxAgeOf, type SecretReader, secretApiKey } from './api-key.ts';
import { ModelConfigError } from './errors.ts';
import { lazyModelTurn } from './lazy.ts';
import { createOpenAiCompatibleModel } from './openai-compatible.ts';
import type { ModelTurnFunction } from './types.ts';

export { ApiKeyUnavailable, DEFAULT_API_KEY_MAX_AGE_SECONDS, type SecretReader } from './api-key.ts';
export { ModelConfigError } from './errors.ts';

/** Where the configured providers are served. */
export const MODEL_PATHS = { bedrock: '/lib/models/bedrock', openai: '/lib/models/openai' } as const;

/** One configured model-turn function, as the start banner and the tests describe it. */
export interface ConfiguredModel {
  path: string;
  /** Our adapters (`bedrock`, `openai-compatible`) or an AI SDK provider of AGENT_RUNS_MODELS. */
  provider: 'bedrock' | 'openai-compatible' | AiSdkProvider;
  /** The provider's model id. */
  model: string;
  /** Where the API key comes from: `secret <id>`, `environment[ NAME]`, `aws` or `none`. */
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

  const bedrockIds = (value(ENV.BEDROCK_MODEL_ID) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const region = value(ENV.BEDROCK_REGION);
  for (const [i, modelId] of bedrockIds.entries()) {
    if (!BEDROCK_ID.test(modelId)) {
      throw new ModelConfigError(ENV.BEDROCK_MODEL_ID, `not a model id: ${JSON.stringify(modelId)}`);
    }
    // The Bedrock runtime client is imported on the first turn (lazy.ts).
    const fn = lazyModelTurn(async () =>
      (await import('./bedrock.ts')).createBedrockModel({
        modelId,
        ...(region !== undefined ? { region } : {}),
      }),
    );
    const paths = [`${MODEL_PATHS.bedrock}/${modelId}`, ...(i === 0 ? [MODEL_PATHS.bedrock] : [])];
    for (const path of paths) {
      functions[path] = fn;
      models.push({ path, provider: 'bedrock', model: modelId });
    }
  }

  const baseUrl = value(ENV.OPENAI_BASE_URL);
  const model = value(ENV.OPENAI_MODEL);
  if ((baseUrl === undefined) !== (model === undefined)) {
    const missing = baseUrl === undefined ? ENV.OPENAI_BASE_URL : ENV.OPENAI_MODEL;
    throw new ModelConfigError(missing, 'OPENAI_BASE_URL and OPENAI_MODEL go together');
  }
  if (baseUrl !== undefined && model !== undefined) {
    if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
      throw new ModelConfigError(ENV.OPENAI_BASE_URL, `not an http(s) URL: ${baseUrl}`);
    }
    const plainKey = value(ENV.OPENAI_API_KEY);
    const secretId = value(ENV.OPENAI_API_KEY_SECRET);
    if (plainKey !== undefined && secretId !== undefined) {
      throw new ModelConfigError(
        ENV.OPENAI_API_KEY_SECRET,
        'give OPENAI_API_KEY or OPENAI_API_KEY_SECRET, not both',
      );
    }
    const maxAge = maxAgeOf(value(ENV.OPENAI_API_KEY_MAX_AGE_SECONDS));
    const apiKey =
      secretId !== undefined
        ? secretApiKey(secretId, maxAge, options.secrets ?? lazySecretsProvider())
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

  const listed = value(ENV.AGENT_RUNS_MODELS);
  if (listed !== undefined) {
    const entries = parseAiSdkModels(listed);
    const more = aiSdkModels(entries, { env, secrets: () => options.secrets ?? lazySecretsProvider() });
    for (const m of more.models) {
      if (m.path in functions) {
        throw new ModelConfigError(
          ENV.AGENT_RUNS_MODELS,
          `${m.path} is already configured by another variable`,
        );
      }
      models.push(m);
    }
    Object.assign(functions, more.functions);
  }

  const defaultPath = defaultPathOf(value(ENV.AGENT_RUNS_DEFAULT_MODEL), functions);
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
    if (MODEL_PATHS.openai in functions) return MODEL_PATHS.openai;
    return Object.keys(functions)[0];
  }
  const path = chosen === 'bedrock' || chosen === 'openai' ? MODEL_PATHS[chosen] : chosen;
  if (!(path in functions)) {
    const known = Object.keys(functions);
    throw new ModelConfigError(
      ENV.AGENT_RUNS_DEFAULT_MODEL,
      `${chosen} is not configured (configured: ${known.length > 0 ? known.join(', ') : 'none'})`,
    );
  }
  return path;
}

/**
 * Powertools' SecretsProvider (the Secrets Manager client with it), imported and built on the
 * first read, so a container whose models need no secret never loads it.
 */
function lazySecretsProvider(): SecretReader {
  let provider: Promise<SecretReader> | undefined;
  return {
    async get(name, options) {
      provider ??= import('@aws-lambda-powertools/parameters/secrets').then(
        (m) => new m.SecretsProvider(),
        (error: unknown) => {
          provider = undefined;
          throw error;
        },
      );
      return (await provider).get(name, options);
    },
  };
}
