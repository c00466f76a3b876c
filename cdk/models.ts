/**
 * The model-turn functions of a deployment, wired into the step function: the environment
 * lib/models/configured.ts reads at container start (BEDROCK_MODEL_ID, OPENAI_BASE_URL,
 * OPENAI_MODEL, OPENAI_API_KEY_SECRET, AGENT_RUNS_DEFAULT_MODEL) and the IAM it needs:
 * `bedrock:InvokeModel` on exactly the configured models, and read access to the one secret
 * holding the OpenAI-compatible API key. The environment is checked at synth time with the
 * same code the function runs, so a configuration the runtime would refuse fails `cdk synth`.
 */
import { ArnFormat, Aws, CfnOutput, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct, type IConstruct } from 'constructs';
import { ENV } from '../lib/config.ts';
import type { AiSdkModelEntry } from '../lib/models/ai-sdk-config.ts';
import { modelsFromEnv } from '../lib/models/configured.ts';
import { acknowledge } from './nag.ts';

export interface OpenAiModelProps {
  /** e.g. `https://api.openai.com/v1` (`/chat/completions` is appended). */
  readonly baseUrl: string;
  readonly model: string;
  /**
   * The Secrets Manager secret holding the API key (its full ARN, or its name). Default: the
   * stack creates an empty one (output `OpenAiApiKeySecretArn`) to be filled with
   * `aws secretsmanager put-secret-value` after deploy.
   */
  readonly apiKeySecret?: string;
}

export interface ModelsProps {
  /** Bedrock model or inference-profile ids (e.g. `us.anthropic.claude-sonnet-4-6`, an inference profile, or `anthropic.claude-...` a foundation model); the first is `/lib/models/bedrock`. */
  readonly bedrockModelIds?: readonly string[];
  /** Further model ARNs the step function may invoke (beyond those derived from the ids). */
  readonly bedrockModelArns?: readonly string[];
  readonly openAi?: OpenAiModelProps;
  /** `bedrock`, `openai` or a model path: what a run gets when it names none (AGENT_RUNS_DEFAULT_MODEL). */
  readonly defaultModel?: string;
  /** AI SDK models as data (AGENT_RUNS_MODELS): the step function may read each `api_key_secret` and invoke each amazon-bedrock model. */
  readonly aiSdkModels?: readonly AiSdkModelEntry[];
  readonly removalPolicy: RemovalPolicy;
}

/** Inference-profile ids start with a geography (`us.`, `eu.`, `apac.`, `global.`, ...). */
const INFERENCE_PROFILE = /^(us|us-gov|eu|apac|jp|au|ca|global)\.(.+)$/;

/** Configures the models on `stepFunction` (environment and IAM). Throws what the runtime would throw (ModelConfigError). */
export class Models extends Construct {
  /** The environment set on the step function. */
  readonly environment: Readonly<Record<string, string>>;
  /** The API key secret, when an OpenAI-compatible model is configured. */
  readonly apiKeySecret: ISecret | undefined;
  /** Where the reviewed cdk-nag findings of the grants are acknowledged: the step function's role. */
  private readonly grantee: IConstruct;

  constructor(scope: Construct, id: string, stepFunction: LambdaFunction, props: ModelsProps) {
    super(scope, id);
    this.grantee = stepFunction.role ?? this;
    const env: Record<string, string> = {};
    const ids = props.bedrockModelIds ?? [];
    if (ids.length > 0) env[ENV.BEDROCK_MODEL_ID] = ids.join(',');
    let secret: ISecret | undefined;
    if (props.openAi !== undefined) {
      env[ENV.OPENAI_BASE_URL] = props.openAi.baseUrl;
      env[ENV.OPENAI_MODEL] = props.openAi.model;
      secret = this.apiKeySecretOf(props.openAi, props.removalPolicy);
      env[ENV.OPENAI_API_KEY_SECRET] = props.openAi.apiKeySecret ?? secret.secretArn;
      secret.grantRead(stepFunction);
    }
    const aiSdk = props.aiSdkModels ?? [];
    if (aiSdk.length > 0) env[ENV.AGENT_RUNS_MODELS] = JSON.stringify(aiSdk);
    for (const [i, entry] of aiSdk.entries()) {
      if (entry.api_key_secret === undefined) continue;
      const given = entry.api_key_secret;
      const read = given.startsWith('arn:')
        ? Secret.fromSecretCompleteArn(this, `AiSdkKey${i}`, given)
        : Secret.fromSecretNameV2(this, `AiSdkKey${i}`, given);
      if (!given.startsWith('arn:')) {
        acknowledge(
          this.grantee,
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${given}-??????]`,
          'A secret named (not given by full ARN) is matched with the six-character suffix Secrets Manager appends; the grant names that one secret.',
        );
      }
      read.grantRead(stepFunction);
    }
    if (props.defaultModel !== undefined) env[ENV.AGENT_RUNS_DEFAULT_MODEL] = props.defaultModel;
    // The same checks the step function runs at start (no I/O).
    modelsFromEnv(env);
    for (const [key, value] of Object.entries(env)) stepFunction.addEnvironment(key, value);
    this.environment = env;
    this.apiKeySecret = secret;

    const arns = [
      ...ids.flatMap((modelId) => this.bedrockArnsOf(modelId)),
      ...aiSdk.filter((e) => e.provider === 'amazon-bedrock').flatMap((e) => this.bedrockArnsOf(e.model)),
      ...(props.bedrockModelArns ?? []),
    ];
    if (arns.length > 0) {
      stepFunction.addToRolePolicy(
        new PolicyStatement({ effect: Effect.ALLOW, actions: ['bedrock:InvokeModel'], resources: arns }),
      );
    }
  }

  /**
   * The ARNs one id needs: an ARN as given; a foundation model in the stack's region; an
   * inference profile in this account plus its foundation model in every region it may route to.
   */
  private bedrockArnsOf(modelId: string): string[] {
    if (modelId.startsWith('arn:')) return [modelId];
    const stack = Stack.of(this);
    const foundation = (region: string, name: string) =>
      stack.formatArn({
        service: 'bedrock',
        region,
        account: '',
        resource: 'foundation-model',
        resourceName: name,
        arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
      });
    const profile = INFERENCE_PROFILE.exec(modelId);
    if (profile?.[2] === undefined) return [foundation(Aws.REGION, modelId)];
    const base = profile[2];
    acknowledge(
      this.grantee,
      `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${base}]`,
      `The inference profile ${modelId} routes requests to ${base} in several regions; the grant names that one model in any region.`,
    );
    return [
      stack.formatArn({
        service: 'bedrock',
        resource: 'inference-profile',
        resourceName: modelId,
        arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
      }),
      foundation('*', base),
    ];
  }

  private apiKeySecretOf(openAi: OpenAiModelProps, removalPolicy: RemovalPolicy): ISecret {
    const given = openAi.apiKeySecret;
    if (given !== undefined) {
      if (given.startsWith('arn:')) return Secret.fromSecretCompleteArn(this, 'OpenAiApiKey', given);
      const imported = Secret.fromSecretNameV2(this, 'OpenAiApiKey', given);
      acknowledge(
        this.grantee,
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${given}-??????]`,
        'A secret named (not given by full ARN) is matched with the six-character suffix Secrets Manager appends; the grant names that one secret.',
      );
      return imported;
    }
    const created = new Secret(this, 'OpenAiApiKey', {
      description: `API key of the OpenAI-compatible endpoint ${openAi.baseUrl} (fill with aws secretsmanager put-secret-value)`,
      removalPolicy,
    });
    acknowledge(
      created,
      'AwsSolutions-SMG4',
      'The secret holds a third-party API key; it is rotated at the provider and stored with put-secret-value, not by a rotation Lambda.',
    );
    new CfnOutput(Stack.of(this), 'OpenAiApiKeySecretArn', {
      value: created.secretArn,
      description: 'Put the OpenAI-compatible API key here (aws secretsmanager put-secret-value)',
    });
    return created;
  }
}
