/**
 * The CDK stack: template assertions (table, queues, bucket, functions, event source mapping,
 * schedule, HTTP API and its Cognito or JWT auth, models, tools, alarms, dashboard, IAM),
 * cdk-nag AwsSolutions with no unacknowledged finding, the CloudFormation schema check of
 * CloudFormation Validate (the validator aws-cdk-lib bundles and runs at `cdk synth`), and the
 * real esbuild bundles (they load without node_modules, and carry the files the code reads at
 * run time). docs/architecture.md, "Bird's-eye view", "Runtime versions";
 * docs/reference/storage.md; docs/guides/local-stack.md.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Architecture, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { functionCode, REPO_ROOT } from '../../cdk/bundling.ts';
import {
  AgentRunsStack,
  type AgentRunsStackProps,
  admissionEnvironment,
  liveBoundsEnvironment,
  OBJECT_PREFIXES,
  SERVICE_NAMES,
  VISIBILITY_TIMEOUT_FACTOR,
} from '../../cdk/stack.ts';
import { lazyClient } from '../../lib/aws-clients.ts';
import { createS3BlobStore } from '../../lib/blobs/blob-store.ts';
import { admissionFromEnv } from '../../lib/config.ts';
import { METRIC, METRICS_NAMESPACE } from '../../lib/handlers/observability.ts';
import { liveLimitsFromEnv } from '../../lib/live/limits.ts';
import { CALLER_GROUPS } from '../../lib/http/auth.ts';
import { ConsoleConfig } from '../../lib/http/console-config.ts';
import { STEP_QUEUE_DEFINITION } from '../../lib/local/resources.ts';
import { AGENT_LOOP_ARTIFACT_URL } from '../../lib/reducers/index.ts';
import { hashArtifactBytes } from '../../lib/sandbox/index.ts';
import { GO_WASM_EXEC_URL, STARLARK_RUNTIME_URL } from '../../lib/sandbox/starlark/runtime-files.ts';
import { artifactObjectKey } from '../../lib/sandbox/stored-registry.ts';
import { TABLE_DEFINITION } from '../../lib/store/table.ts';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

const repoRoot = fileURLToPath(REPO_ROOT);
/** The feature flags of cdk.json, so the tests build the stack the way `cdk synth` does. */
const cdkJsonContext = JSON.parse(readFileSync(join(repoRoot, 'cdk.json'), 'utf8')).context as Record<
  string,
  unknown
>;

interface Built {
  stack: AgentRunsStack;
  template: Template;
  resources: Resources;
  outdir: string;
}

const outdirs: string[] = [];

/**
 * Synthesizes one stack into a fresh directory under the system temp dir, with no node_modules
 * above it: a bundle that loads there carries everything it needs, the AWS SDK included.
 * `bundle: false` skips esbuild.
 */
function build(props: AgentRunsStackProps, options: { bundle: boolean; extra?: (app: App) => void }): Built {
  const outdir = mkdtempSync(join(tmpdir(), 'agent-runs-cdk-'));
  outdirs.push(outdir);
  const app = new App({
    outdir: join(outdir, 'cdk.out'),
    builtinCloudFormationValidation: false,
    context: { ...cdkJsonContext, ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }) },
  });
  const stack = new AgentRunsStack(app, 'AgentRunsTest', props);
  options.extra?.(app);
  const template = Template.fromStack(stack);
  return {
    stack,
    template,
    resources: template.toJSON().Resources as Resources,
    outdir: join(outdir, 'cdk.out'),
  };
}

function ofType(resources: Resources, type: string): Array<[string, Record<string, unknown>]> {
  return Object.entries(resources)
    .filter(([, r]) => r.Type === type)
    .map(([id, r]) => [id, r.Properties ?? {}]);
}

/** The routes of the stack's HTTP APIs (not the WebSocket API's). */
function httpRoutes(built: Built): Array<[string, Record<string, unknown>]> {
  const httpApis = new Set(
    ofType(built.resources, 'AWS::ApiGatewayV2::Api')
      .filter(([, a]) => a.ProtocolType === 'HTTP')
      .map(([id]) => JSON.stringify({ Ref: id })),
  );
  return ofType(built.resources, 'AWS::ApiGatewayV2::Route').filter(([, r]) =>
    httpApis.has(JSON.stringify(r.ApiId)),
  );
}

function logicalId(stack: Stack, construct: IConstruct): string {
  const child = construct.node.defaultChild;
  if (child === undefined) throw new Error(`${construct.node.path} has no default child`);
  return stack.getLogicalId(child as never);
}

/** All cdk-nag findings left after acknowledgments, as `ruleName @ path` strings. */
function nagFindings(stack: Stack): string[] {
  const report = new AwsSolutionsChecks().validateScope(stack);
  return report.violations.flatMap((v) =>
    v.violatingResources.map(
      (r) => `${v.severity} ${v.ruleName} @ ${r.constructPath ?? '?'}: ${v.description}`,
    ),
  );
}

/** Every acknowledgment recorded in the tree: rule id → reasons. */
function acknowledgments(root: IConstruct): Array<{ path: string; id: string; reason: string }> {
  const out: Array<{ path: string; id: string; reason: string }> = [];
  for (const c of root.node.findAll()) {
    for (const entry of c.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        out.push({ path: c.node.path, id, reason });
      }
    }
  }
  return out;
}

function statementsOf(resources: Resources, roleLogicalId: string): Array<Record<string, unknown>> {
  return ofType(resources, 'AWS::IAM::Policy')
    .filter(([, p]) => JSON.stringify(p.Roles).includes(`"${roleLogicalId}"`))
    .flatMap(([, p]) => (p.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement);
}

const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

let plain: Built;
let withJwt: Built;
let probeAssetDir: string;

beforeAll(() => {
  // Real bundling for the default stack (and a probe function bundled with the same options).
  plain = build(
    {},
    {
      bundle: true,
      extra: (app) => {
        const probeStack = new Stack(app, 'BundleProbe');
        const probe = new LambdaFunction(probeStack, 'Probe', {
          code: functionCode({ entry: join(repoRoot, 'test/infra/bundle-probe.ts') }),
          handler: 'index.handler',
          runtime: Runtime.NODEJS_24_X,
          architecture: Architecture.ARM_64,
        });
        const probeTemplate = Template.fromStack(probeStack).toJSON() as { Resources: Resources };
        const code = probeTemplate.Resources[logicalId(probeStack, probe)]?.Properties?.Code as {
          S3Key: string;
        };
        probeAssetDir = join(app.outdir, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
      },
    },
  );
  withJwt = build(
    {
      jwtIssuer: 'https://issuer.example.com/',
      jwtAudience: ['agent-runs-api'],
      deletionProtection: false,
      alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:agent-runs-alarms',
      consoleOAuth: {
        issuer: 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc',
        domainUrl: 'https://agent-runs.auth.us-east-1.amazoncognito.com/',
        clientId: 'console-client',
      },
    },
    { bundle: false },
  );
}, 120_000);

afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

describe('table', () => {
  it('is built from TABLE_DEFINITION: keys, GSIs (KEYS_ONLY), TTL attribute', () => {
    const def = TABLE_DEFINITION;
    plain.template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: def.sortKey.name, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: def.globalSecondaryIndexes.map((g) => ({
        IndexName: g.indexName,
        KeySchema: [
          { AttributeName: g.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: g.sortKey.name, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: g.projection },
      })),
      TimeToLiveSpecification: { AttributeName: def.timeToLiveAttribute, Enabled: true },
    });
    const [[, table] = ['', {}]] = ofType(plain.resources, 'AWS::DynamoDB::Table');
    const attrs = table.AttributeDefinitions as Array<{ AttributeName: string; AttributeType: string }>;
    const expected = [
      def.partitionKey,
      def.sortKey,
      ...def.globalSecondaryIndexes.flatMap((g) => [g.partitionKey, g.sortKey]),
    ];
    for (const a of expected) expect(attrs).toContainEqual({ AttributeName: a.name, AttributeType: a.type });
  });

  it('is on demand with point-in-time recovery, AWS-managed encryption and deletion protection by default', () => {
    plain.template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      DeletionProtectionEnabled: true,
    });
    plain.template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain' });
  });

  it('turns deletion protection off when told', () => {
    withJwt.template.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
  });
});

describe('step queue', () => {
  it('redrives to the DLQ after STEP_QUEUE_DEFINITION.maxReceiveCount receives', () => {
    const dlqId = logicalId(plain.stack, plain.stack.stepDeadLetterQueue);
    plain.template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] }, maxReceiveCount: 5 },
    });
    expect(STEP_QUEUE_DEFINITION.maxReceiveCount).toBe(5);
    plain.template.hasResourceProperties('AWS::SQS::Queue', {
      MessageRetentionPeriod: STEP_QUEUE_DEFINITION.dlqMessageRetentionSeconds,
    });
  });

  it('hides a received message for at least 6x the step function timeout', () => {
    const queue = plain.resources[logicalId(plain.stack, plain.stack.stepQueue)]?.Properties ?? {};
    const step = plain.resources[logicalId(plain.stack, plain.stack.stepFunction)]?.Properties ?? {};
    expect(VISIBILITY_TIMEOUT_FACTOR).toBeGreaterThanOrEqual(6);
    expect(step.Timeout).toBe(300);
    expect(queue.VisibilityTimeout as number).toBeGreaterThanOrEqual(6 * (step.Timeout as number));
  });

  it('encrypts every queue (step, its DLQ, the stream DLQ) with SQS-managed keys and denies requests without TLS', () => {
    const queues = ofType(plain.resources, 'AWS::SQS::Queue');
    expect(queues).toHaveLength(3);
    for (const [, q] of queues) expect(q.SqsManagedSseEnabled).toBe(true);
    const policies = ofType(plain.resources, 'AWS::SQS::QueuePolicy');
    expect(policies).toHaveLength(3);
    for (const [, p] of policies) {
      expect(p.PolicyDocument).toMatchObject({
        Statement: [
          { Effect: 'Deny', Action: 'sqs:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } },
        ],
      });
    }
  });
});

describe('payload bucket', () => {
  it('is encrypted, blocks public access, logs access, and cleans up incomplete uploads', () => {
    const bucketId = logicalId(plain.stack, plain.stack.payloadBucket);
    const bucket = plain.resources[bucketId]?.Properties ?? {};
    expect(bucket.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    expect(bucket.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.LoggingConfiguration).toMatchObject({ LogFilePrefix: 'payload-bucket/' });
    expect(bucket.LifecycleConfiguration).toEqual({
      Rules: [
        {
          Id: 'abort-incomplete-uploads',
          AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          Status: 'Enabled',
        },
      ],
    });
  });

  it('denies every request without TLS (bucket policy)', () => {
    const bucketId = logicalId(plain.stack, plain.stack.payloadBucket);
    plain.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  it('expires noncurrent versions when versioned and payloads when an expiration is set', () => {
    const built = build(
      { payloadVersioning: true, payloadExpiration: Duration.days(365) },
      { bundle: false },
    );
    const bucket = built.resources[logicalId(built.stack, built.stack.payloadBucket)]?.Properties ?? {};
    expect(bucket.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    const rules = (bucket.LifecycleConfiguration as { Rules: Array<{ Id: string }> }).Rules.map((r) => r.Id);
    expect(rules).toEqual(['abort-incomplete-uploads', 'expire-noncurrent', 'expire-payloads']);
  });
});

describe('functions', () => {
  it('runs control, step, sweeper, live and stream on nodejs24.x arm64 with the runtime configuration in the environment', () => {
    const s = plain.stack;
    expect(ofType(plain.resources, 'AWS::Lambda::Function')).toHaveLength(5);
    for (const [fn, service] of [
      [s.controlFunction, 'agent-runs-control'],
      [s.stepFunction, 'agent-runs-step'],
      [s.sweeperFunction, 'agent-runs-sweeper'],
      [s.liveFunction, 'agent-runs-live'],
      [s.streamFunction, 'agent-runs-stream'],
    ] as const) {
      const props = plain.resources[logicalId(s, fn)]?.Properties ?? {};
      expect(props).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON' },
        Environment: {
          Variables: {
            TABLE_NAME: { Ref: logicalId(s, s.table) },
            STEP_QUEUE_URL: { Ref: logicalId(s, s.stepQueue) },
            PAYLOAD_BUCKET: { Ref: logicalId(s, s.payloadBucket) },
            POWERTOOLS_SERVICE_NAME: service,
            POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
          },
        },
      });
    }
  });

  it('gives the control function the admission limits, with defaults, and reads them as the runtime will', () => {
    const s = plain.stack;
    const props = plain.resources[logicalId(s, s.controlFunction)]?.Properties ?? {};
    const vars = (props.Environment as { Variables: Record<string, string> }).Variables;
    expect(vars).toMatchObject({
      AGENT_RUNS_MAX_LIVE_RUNS: '100',
      AGENT_RUNS_MAX_CREATES_PER_MINUTE: '120',
      AGENT_RUNS_RISK_TIER_FLOOR: 'standard',
    });
    // References (the table's name, ...) resolve at deploy time: the literal values are read here.
    const literal = Object.fromEntries(Object.entries(vars).filter(([, v]) => typeof v === 'string'));
    expect(admissionFromEnv(literal)).toEqual({
      max_live_runs: 100,
      max_creates_per_minute: 120,
      risk_tier_floor: 'standard',
    });
    expect(admissionEnvironment({ maxLiveRuns: null, riskTierFloor: 'high' })).toEqual({
      AGENT_RUNS_MAX_CREATES_PER_MINUTE: '120',
      AGENT_RUNS_RISK_TIER_FLOOR: 'high',
    });
    expect(() => admissionEnvironment({ maxCreatesPerMinute: 0 })).toThrow(
      /AGENT_RUNS_MAX_CREATES_PER_MINUTE/,
    );
    // The step function admits delegated children: it reads the same limits.
    const step = plain.resources[logicalId(s, s.stepFunction)]?.Properties ?? {};
    expect((step.Environment as { Variables: Record<string, string> }).Variables).toMatchObject({
      AGENT_RUNS_MAX_LIVE_RUNS: '100',
    });
    expect(admissionEnvironment({ maxChildrenPerRun: 8, maxTreeDepth: 2 })).toMatchObject({
      AGENT_RUNS_MAX_CHILDREN_PER_RUN: '8',
      AGENT_RUNS_MAX_TREE_DEPTH: '2',
    });
    expect(() => admissionEnvironment({ maxTreeDepth: 0 })).toThrow(/AGENT_RUNS_MAX_TREE_DEPTH/);
  });

  it("gives the live function the live socket's bounds it is given, each read as the runtime will", () => {
    expect(liveBoundsEnvironment()).toEqual({});
    const env = liveBoundsEnvironment({
      maxConnections: 4,
      maxSubscriptions: 8,
      subscribesPerMinute: 30,
      replayBytes: 65_536,
      replayWindowMs: 5_000,
    });
    expect(env).toEqual({
      AGENT_RUNS_LIVE_MAX_CONNECTIONS: '4',
      AGENT_RUNS_LIVE_MAX_SUBSCRIPTIONS: '8',
      AGENT_RUNS_LIVE_SUBSCRIBES_PER_MINUTE: '30',
      AGENT_RUNS_LIVE_REPLAY_BYTES: '65536',
      AGENT_RUNS_LIVE_REPLAY_WINDOW_MS: '5000',
    });
    expect(liveLimitsFromEnv(env)).toEqual({
      maxConnections: 4,
      maxSubscriptions: 8,
      subscribesPerMinute: 30,
      replayBytes: 65_536,
      replayWindowMs: 5_000,
    });
    expect(() => liveBoundsEnvironment({ maxConnections: 0 })).toThrow(/AGENT_RUNS_LIVE_MAX_CONNECTIONS/);
  });

  it('feeds the step queue to the step function in batches of 10 with partial batch responses', () => {
    const s = plain.stack;
    plain.template.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
    plain.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(s, s.stepQueue), 'Arn'] },
      FunctionName: { Ref: logicalId(s, s.stepFunction) },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumBatchingWindowInSeconds: Match.anyValue(),
    });
    const esm =
      ofType(plain.resources, 'AWS::Lambda::EventSourceMapping').find(
        ([, m]) => JSON.stringify(m.FunctionName) === JSON.stringify({ Ref: logicalId(s, s.stepFunction) }),
      )?.[1] ?? {};
    expect(esm.MaximumBatchingWindowInSeconds as number).toBeLessThanOrEqual(5);
  });

  it('invokes the sweeper every minute from EventBridge Scheduler, without retries', () => {
    const s = plain.stack;
    plain.template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Target: {
        Arn: { 'Fn::GetAtt': [logicalId(s, s.sweeperFunction), 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 0 },
      },
    });
  });
});

describe('HTTP API', () => {
  const routeKeys = [
    'ANY /',
    'ANY /{proxy+}',
    'GET /console',
    'GET /console/{proxy+}',
    'GET /health',
    'GET /openapi.json',
  ];

  it('by default authorizes every route but the public ones with JWTs of a Cognito user pool it creates', () => {
    const s = plain.stack;
    const pool = s.auth.userPool;
    const client = s.auth.userPoolClient;
    if (pool === undefined || client === undefined) throw new Error('no user pool');
    plain.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: {
        Issuer: { 'Fn::GetAtt': [logicalId(s, pool), 'ProviderURL'] },
        Audience: [{ Ref: logicalId(s, client) }],
      },
    });
    const routes = httpRoutes(plain);
    expect(routes.map(([, r]) => r.RouteKey).sort()).toEqual(routeKeys);
    expect(Object.fromEntries(routes.map(([, r]) => [r.RouteKey, r.AuthorizationType]))).toEqual({
      'ANY /': 'JWT',
      'ANY /{proxy+}': 'JWT',
      'GET /console': 'NONE',
      'GET /console/{proxy+}': 'NONE',
      'GET /health': 'NONE',
      'GET /openapi.json': 'NONE',
    });
    plain.template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      PayloadFormatVersion: '2.0',
      IntegrationUri: { 'Fn::GetAtt': [logicalId(s, s.controlFunction), 'Arn'] },
    });
  });

  it('creates the user pool without self sign-up, with the admin and system groups auth.ts reads', () => {
    plain.template.hasResourceProperties('AWS::Cognito::UserPool', {
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      UsernameAttributes: ['email'],
      Policies: { PasswordPolicy: Match.objectLike({ MinimumLength: 12 }) },
    });
    const groups = ofType(plain.resources, 'AWS::Cognito::UserPoolGroup').map(([, g]) => g.GroupName);
    expect(groups.sort()).toEqual([CALLER_GROUPS.admin, CALLER_GROUPS.system].sort());
    plain.template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      GenerateSecret: false,
      ExplicitAuthFlows: Match.arrayWith(['ALLOW_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH']),
    });
    expect(Object.keys(plain.template.toJSON().Outputs)).toEqual(
      expect.arrayContaining(['ApiUrl', 'UserPoolId', 'UserPoolClientId', 'AlarmTopicArn', 'DashboardName']),
    );
  });

  it('uses an existing issuer instead of creating a user pool when one is given', () => {
    withJwt.template.resourceCountIs('AWS::Cognito::UserPool', 0);
    expect(Object.keys(withJwt.template.toJSON().Outputs)).not.toContain('UserPoolId');
  });

  it('serves the same routes behind IAM auth for service callers when asked, and grants invoke on it', () => {
    const built = build({ iamAuth: true }, { bundle: false });
    const apis = ofType(built.resources, 'AWS::ApiGatewayV2::Api').filter(
      ([, a]) => a.ProtocolType === 'HTTP',
    );
    expect(apis).toHaveLength(2);
    const serviceApiId = logicalId(built.stack, built.stack.serviceApi as IConstruct);
    const serviceRoutes = ofType(built.resources, 'AWS::ApiGatewayV2::Route').filter(
      ([, r]) => JSON.stringify(r.ApiId) === JSON.stringify({ Ref: serviceApiId }),
    );
    expect(Object.fromEntries(serviceRoutes.map(([, r]) => [r.RouteKey, r.AuthorizationType]))).toEqual({
      'ANY /': 'AWS_IAM',
      'ANY /{proxy+}': 'AWS_IAM',
      'GET /health': 'NONE',
      'GET /openapi.json': 'NONE',
    });
    expect(Object.keys(built.template.toJSON().Outputs)).toContain('ServiceApiUrl');
    expect(() => plain.stack.grantServiceInvoke(plain.stack.stepFunction)).toThrow(/iamAuth/);
  });

  it('puts a JWT authorizer on every route except health, the OpenAPI document and the console when configured', () => {
    withJwt.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: { Issuer: 'https://issuer.example.com/', Audience: ['agent-runs-api'] },
    });
    const routes = Object.fromEntries(httpRoutes(withJwt).map(([, r]) => [r.RouteKey, r.AuthorizationType]));
    expect(routes).toEqual({
      'ANY /': 'JWT',
      'ANY /{proxy+}': 'JWT',
      'GET /console': 'NONE',
      'GET /console/{proxy+}': 'NONE',
      'GET /health': 'NONE',
      'GET /openapi.json': 'NONE',
    });
  });

  it("gives the control function the console's sign-in: a pasted token by default, else the hosted UI with PKCE", () => {
    const configOf = (built: Built) => {
      const fn = built.resources[logicalId(built.stack, built.stack.controlFunction)];
      const env = (fn?.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
        ?.Variables;
      if (env === undefined) throw new Error('the control function has no environment');
      return ConsoleConfig.parse(JSON.parse(String(env.CONSOLE_CONFIG)));
    };

    expect(configOf(plain).auth.kind).toBe('token');
    expect(configOf(withJwt)).toEqual({
      sweep_interval_ms: 60_000,
      auth: {
        kind: 'oauth',
        issuer: 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc',
        authorization_endpoint: 'https://agent-runs.auth.us-east-1.amazoncognito.com/oauth2/authorize',
        token_endpoint: 'https://agent-runs.auth.us-east-1.amazoncognito.com/oauth2/token',
        end_session_endpoint: 'https://agent-runs.auth.us-east-1.amazoncognito.com/logout',
        client_id: 'console-client',
        scopes: ['openid'],
        token_use: 'access',
      },
    });
  });

  it('gives its own user pool a hosted UI and a console client when given consoleDomainPrefix, and signs the console in through them', () => {
    const hosted = build({ consoleDomainPrefix: 'agent-runs-test' }, { bundle: false });
    const [[, domain] = ['', {}]] = ofType(hosted.resources, 'AWS::Cognito::UserPoolDomain');
    expect(domain.Domain).toBe('agent-runs-test');
    const clients = ofType(hosted.resources, 'AWS::Cognito::UserPoolClient');
    const consoleClient = clients.find(([, c]) => JSON.stringify(c.AllowedOAuthFlows) === '["code"]');
    if (consoleClient === undefined) throw new Error('no console app client');
    const [consoleId, client] = consoleClient;
    expect(client).toMatchObject({
      GenerateSecret: false,
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthScopes: ['openid', 'email', 'profile'],
      SupportedIdentityProviders: ['COGNITO'],
    });
    expect(JSON.stringify(client.CallbackURLs)).toContain('/console/callback');
    expect(JSON.stringify(client.LogoutURLs)).toContain('/console/');
    // The API accepts the console's tokens as well as the CLI client's.
    const [[, authorizer] = ['', {}]] = ofType(hosted.resources, 'AWS::ApiGatewayV2::Authorizer').filter(
      ([, a]) => a.AuthorizerType === 'JWT',
    );
    const audience = (authorizer.JwtConfiguration as { Audience: unknown[] }).Audience;
    expect(audience).toHaveLength(2);
    expect(audience).toContainEqual({ Ref: consoleId });
    // CONSOLE_CONFIG names the hosted UI and the client (resolved at deploy: read with placeholders).
    const fn = hosted.resources[logicalId(hosted.stack, hosted.stack.controlFunction)];
    const env = (fn?.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
      ?.Variables;
    const raw = env?.CONSOLE_CONFIG;
    const parts = (raw as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
    const text = parts.map((p) => (typeof p === 'string' ? p : `<${JSON.stringify(p).replace(/"/g, '')}>`));
    const config = JSON.parse(text.join('')) as { auth: Record<string, unknown> };
    expect(config.auth).toMatchObject({
      kind: 'oauth',
      client_id: `<{Ref:${consoleId}}>`,
      scopes: ['openid', 'email', 'profile'],
      token_use: 'access',
    });
    expect(config.auth.issuer).toMatch(/ProviderURL/);
    for (const [key, path] of [
      ['authorization_endpoint', '/oauth2/authorize'],
      ['token_endpoint', '/oauth2/token'],
      ['end_session_endpoint', '/logout'],
    ])
      expect(config.auth[key as string]).toMatch(
        new RegExp(`^https://<.+>\\.auth\\.<.+>\\.amazoncognito\\.com${path}$`),
      );
    expect(nagFindings(hosted.stack)).toEqual([]);
    expect(() =>
      build(
        { jwtIssuer: 'https://issuer.example.com/', jwtAudience: ['a'], consoleDomainPrefix: 'x-y' },
        { bundle: false },
      ),
    ).toThrow(/consoleDomainPrefix needs the user pool/);
  });

  it('rejects a JWT issuer without an audience', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    expect(() => new AgentRunsStack(app, 'Bad', { jwtIssuer: 'https://issuer.example.com/' })).toThrow(
      /jwtAudience/,
    );
  });

  it('logs access as JSON to a log group and throttles the $default stage', () => {
    plain.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      AccessLogSettings: {
        DestinationArn: { 'Fn::GetAtt': [Match.anyValue(), 'Arn'] },
        Format: Match.stringLikeRegexp('requestId'),
      },
      DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
    });
  });
});

describe('operations', () => {
  const alarmIds = [
    'QueueAgeAlarm',
    'DlqDepthAlarm',
    'Api5xxAlarm',
    'ThrottlesAlarm',
    'StepErrorsAlarm',
    'SweeperErrorsAlarm',
    'TakeoversAlarm',
  ];

  it('watches queue age, DLQ depth, API 5xx, throttles, step and sweeper errors, and takeovers', () => {
    const s = plain.stack;
    plain.template.resourceCountIs('AWS::CloudWatch::Alarm', alarmIds.length);
    const alarm = (name: keyof typeof s.alarms) =>
      plain.resources[logicalId(s, s.alarms[name])]?.Properties ?? {};
    expect(alarm('queueAge')).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(s, s.stepQueue), 'QueueName'] } }],
      Threshold: 900,
    });
    expect(alarm('dlqDepth')).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(s, s.stepDeadLetterQueue), 'QueueName'] } },
      ],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(alarm('api5xx')).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
      Dimensions: [{ Name: 'ApiId', Value: { Ref: logicalId(s, s.httpApi) } }],
    });
    const throttled = JSON.stringify(alarm('throttles').Metrics);
    for (const fn of [s.controlFunction, s.stepFunction, s.sweeperFunction]) {
      expect(throttled).toContain(`{"Ref":"${logicalId(s, fn)}"}`);
    }
    expect(throttled).toContain('"MetricName":"Throttles"');
    expect(alarm('stepErrors')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(s, s.stepFunction) } }],
    });
    expect(alarm('sweeperErrors')).toMatchObject({
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(s, s.sweeperFunction) } }],
    });
    expect(alarm('takeovers')).toMatchObject({
      Namespace: METRICS_NAMESPACE,
      MetricName: METRIC.takeovers,
      // The sweeper's Powertools service name (functions/sweeper.ts): the metric's only dimension.
      Dimensions: [{ Name: 'service', Value: 'agent-runs-sweeper' }],
      Statistic: 'Sum',
    });
  });

  it('names the service the sweeper handler gives Powertools, so the takeover alarm sees its metric', () => {
    const source = readFileSync(join(repoRoot, 'functions/sweeper.ts'), 'utf8');
    expect(source).toContain(`lambdaContainer('${SERVICE_NAMES.sweeper}')`);
  });

  it('creates an encrypted alarm topic every alarm notifies when none is given', () => {
    const s = plain.stack;
    const topicId = logicalId(s, s.operations.topic as unknown as IConstruct);
    plain.template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    plain.template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    for (const [, alarm] of ofType(plain.resources, 'AWS::CloudWatch::Alarm')) {
      expect(alarm.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.OKActions).toEqual([{ Ref: topicId }]);
    }
  });

  it('notifies the given topic instead, and creates none', () => {
    const topic = 'arn:aws:sns:us-east-1:123456789012:agent-runs-alarms';
    withJwt.template.resourceCountIs('AWS::SNS::Topic', 0);
    for (const [, alarm] of ofType(withJwt.resources, 'AWS::CloudWatch::Alarm')) {
      expect(alarm.AlarmActions).toEqual([topic]);
      expect(alarm.OKActions).toEqual([topic]);
    }
  });

  it('draws a dashboard of every runtime metric, the queues, the API and the functions', () => {
    const [[, dashboard] = ['', {}]] = ofType(plain.resources, 'AWS::CloudWatch::Dashboard');
    const body = JSON.stringify(dashboard.DashboardBody);
    for (const name of Object.values(METRIC)) expect(body, name).toContain(`\\"${name}\\"`);
    for (const name of ['ApproximateAgeOfOldestMessage', '5xx', 'Throttles', 'Duration']) {
      expect(body, name).toContain(name);
    }
  });

  it('reserves one concurrent sweeper and caps concurrent steps at 10 by default, both configurable', () => {
    const s = plain.stack;
    expect(plain.resources[logicalId(s, s.sweeperFunction)]?.Properties?.ReservedConcurrentExecutions).toBe(
      1,
    );
    for (const fn of [s.controlFunction, s.stepFunction]) {
      expect(plain.resources[logicalId(s, fn)]?.Properties?.ReservedConcurrentExecutions).toBeUndefined();
    }
    plain.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 10 },
    });
    const tuned = build({ stepMaxConcurrency: 3, sweeperReservedConcurrency: null }, { bundle: false });
    tuned.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 3 },
    });
    const sweeper = tuned.resources[logicalId(tuned.stack, tuned.stack.sweeperFunction)]?.Properties ?? {};
    expect(sweeper.ReservedConcurrentExecutions).toBeUndefined();
  });
});

describe('models', () => {
  const SONNET = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
  const PROFILE = 'us.anthropic.claude-3-7-sonnet-20250219-v1:0';
  const envOf = (built: Built, fn: LambdaFunction) =>
    ((
      built.resources[logicalId(built.stack, fn)]?.Properties?.Environment as {
        Variables: Record<string, unknown>;
      }
    )?.Variables ?? {}) as Record<string, unknown>;
  const bedrockGrants = (built: Built) =>
    statementsOf(built.resources, logicalId(built.stack, built.stack.stepFunction.role as IConstruct)).filter(
      (st) => JSON.stringify(st.Action).includes('bedrock:'),
    );

  it('configures no model and grants no Bedrock access by default', () => {
    expect(envOf(plain, plain.stack.stepFunction).BEDROCK_MODEL_ID).toBeUndefined();
    expect(bedrockGrants(plain)).toEqual([]);
  });

  it('hands the step function its Bedrock model ids and allows InvokeModel on exactly those models', () => {
    const built = build({ bedrockModelIds: [SONNET, PROFILE] }, { bundle: false });
    expect(envOf(built, built.stack.stepFunction).BEDROCK_MODEL_ID).toBe(`${SONNET},${PROFILE}`);
    expect(envOf(built, built.stack.controlFunction).BEDROCK_MODEL_ID).toBeUndefined();
    const [grant, ...more] = bedrockGrants(built);
    expect(more).toEqual([]);
    expect(grant?.Action).toBe('bedrock:InvokeModel');
    const resources = JSON.stringify(grant?.Resource);
    expect(resources).toContain(`::foundation-model/${SONNET}`);
    expect(resources).toContain(`:inference-profile/${PROFILE}`);
    expect(resources).toContain(`:bedrock:*::foundation-model/${PROFILE.slice(3)}`);
    expect(nagFindings(built.stack)).toEqual([]);
  });

  it('hands the step function AI SDK models as data, with IAM for their secret and Bedrock model', () => {
    const models = [
      { provider: 'anthropic' as const, model: 'claude-sonnet-4-5', api_key_secret: 'prod/anthropic' },
      { provider: 'google' as const, model: 'gemini-2.5-flash', api_key_secret: 'prod/gemini' },
      { provider: 'amazon-bedrock' as const, model: SONNET },
    ];
    const built = build({ aiSdkModels: models }, { bundle: false });
    const env = envOf(built, built.stack.stepFunction);
    expect(JSON.parse(String(env.AGENT_RUNS_MODELS))).toEqual(models);
    const [grant, ...more] = bedrockGrants(built);
    expect(more).toEqual([]);
    expect(JSON.stringify(grant?.Resource)).toContain(`::foundation-model/${SONNET}`);
    const readers = ofType(built.resources, 'AWS::IAM::Policy').filter(([, p]) =>
      JSON.stringify(p.PolicyDocument).includes('secretsmanager:GetSecretValue'),
    );
    expect(readers).toHaveLength(1);
    expect(JSON.stringify(readers[0]?.[1].PolicyDocument)).toContain('secret:prod/anthropic');
    expect(JSON.stringify(readers[0]?.[1].PolicyDocument)).toContain('secret:prod/gemini');
    expect(nagFindings(built.stack)).toEqual([]);
  });

  it('reads the OpenAI-compatible key from a secret only the step function may read', () => {
    const built = build(
      { openAi: { baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini' }, defaultModel: 'openai' },
      { bundle: false },
    );
    const env = envOf(built, built.stack.stepFunction);
    const secretId = logicalId(built.stack, built.stack.models.apiKeySecret as unknown as IConstruct);
    expect(env).toMatchObject({
      OPENAI_BASE_URL: 'https://api.openai.com/v1',
      OPENAI_MODEL: 'gpt-4o-mini',
      OPENAI_API_KEY_SECRET: { Ref: secretId },
      AGENT_RUNS_DEFAULT_MODEL: 'openai',
    });
    expect(env.OPENAI_API_KEY).toBeUndefined();
    const readers = ofType(built.resources, 'AWS::IAM::Policy').filter(([, p]) =>
      JSON.stringify(p.PolicyDocument).includes('secretsmanager:GetSecretValue'),
    );
    expect(readers).toHaveLength(1);
    expect(JSON.stringify(readers[0]?.[1].Roles)).toContain(
      logicalId(built.stack, built.stack.stepFunction.role as IConstruct),
    );
    expect(Object.keys(built.template.toJSON().Outputs)).toContain('OpenAiApiKeySecretArn');
    expect(nagFindings(built.stack)).toEqual([]);
  });

  it('fails the synth for a configuration the step function would refuse, naming the setting', () => {
    expect(() => build({ defaultModel: 'openai', bedrockModelIds: [SONNET] }, { bundle: false })).toThrow(
      /AGENT_RUNS_DEFAULT_MODEL/,
    );
  });
});

describe('tools', () => {
  it('registers the configured tools in control and step, and lets step invoke exactly the Lambda tools', () => {
    const arn = 'arn:aws:lambda:us-east-1:123456789012:function:refund';
    const tools = [
      {
        name: 'refund',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: true, replay_safe: true, approval: 'always' as const },
        target: { kind: 'lambda' as const, function_name: arn },
      },
      {
        name: 'lookup',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true },
        target: { kind: 'http' as const, url: 'https://tools.example.com/lookup' },
      },
    ];
    const built = build({ tools }, { bundle: false });
    for (const fn of [built.stack.controlFunction, built.stack.stepFunction]) {
      const environment = built.resources[logicalId(built.stack, fn)]?.Properties?.Environment as
        | { Variables: Record<string, unknown> }
        | undefined;
      const vars = environment?.Variables ?? {};
      expect(JSON.parse(String(vars.AGENT_RUNS_TOOLS))).toEqual(tools);
    }
    const invokes = ofType(built.resources, 'AWS::IAM::Policy').flatMap(([, p]) =>
      (p.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement.filter(
        (st) => st.Action === 'lambda:InvokeFunction' && JSON.stringify(st.Resource) === JSON.stringify(arn),
      ),
    );
    expect(invokes).toHaveLength(1);
    expect(() =>
      build(
        { tools: [{ ...tools[1], target: { kind: 'http', url: 'file:///x' } }] as never },
        { bundle: false },
      ),
    ).toThrow(/AGENT_RUNS_TOOLS/);
  });
});

describe('live events and notifications', () => {
  const envOf = (fn: LambdaFunction): Record<string, unknown> => {
    const props = plain.resources[logicalId(plain.stack, fn)]?.Properties;
    return (props?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
  };

  it('streams the table with old and new images', () => {
    const table = plain.resources[logicalId(plain.stack, plain.stack.table)]?.Properties ?? {};
    expect(table.StreamSpecification).toEqual({ StreamViewType: TABLE_DEFINITION.stream });
  });

  it('routes $connect, $disconnect and $default of the WebSocket API to the live function, logging access as JSON', () => {
    const s = plain.stack;
    const apiId = JSON.stringify({ Ref: logicalId(s, s.live.webSocketApi) });
    const routes = ofType(plain.resources, 'AWS::ApiGatewayV2::Route').filter(
      ([, r]) => JSON.stringify(r.ApiId) === apiId,
    );
    expect(routes.map(([, r]) => r.RouteKey).sort()).toEqual(['$connect', '$default', '$disconnect']);
    plain.template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      ApiId: { Ref: logicalId(s, s.live.webSocketApi) },
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: Match.anyValue(),
    });
    const stage = plain.resources[logicalId(s, s.live.stage)]?.Properties ?? {};
    expect(stage).toMatchObject({
      StageName: 'live',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 50 },
    });
    expect(JSON.parse(String((stage.AccessLogSettings as { Format: string }).Format))).toMatchObject({
      connectionId: '$context.connectionId',
      routeKey: '$context.routeKey',
    });
    const env = envOf(s.liveFunction);
    expect(Object.keys(env)).toEqual(
      expect.arrayContaining(['LIVE_CALLBACK_URL', 'JWT_ISSUER', 'JWT_AUDIENCES']),
    );
    expect(env.JWT_ISSUER).toEqual({
      'Fn::GetAtt': [logicalId(s, s.auth.userPool as IConstruct), 'ProviderURL'],
    });
  });

  it('feeds only run record changes of the stream to the stream function, in order, with partial batch responses and a DLQ', () => {
    const s = plain.stack;
    plain.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(s, s.table), 'StreamArn'] },
      FunctionName: { Ref: logicalId(s, s.streamFunction) },
      StartingPosition: 'LATEST',
      ParallelizationFactor: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: 10,
      FilterCriteria: {
        Filters: [{ Pattern: JSON.stringify({ dynamodb: { Keys: { sk: { S: ['R'] } } } }) }],
      },
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(s, s.live.streamDeadLetterQueue), 'Arn'] } },
      },
    });
    expect(envOf(s.streamFunction).EVENT_BUS_NAME).toEqual({ Ref: logicalId(s, s.live.eventBus) });
  });

  it('lets only the stream function publish to the event bus; live and stream post to this WebSocket API only', () => {
    const s = plain.stack;
    const allowed = (fn: LambdaFunction, action: string) =>
      statementsOf(plain.resources, logicalId(s, fn.role as IConstruct)).filter(
        (st) => st.Effect === 'Allow' && asArray(st.Action).includes(action),
      );
    const busArn = { 'Fn::GetAtt': [logicalId(s, s.live.eventBus), 'Arn'] };
    expect(allowed(s.streamFunction, 'events:PutEvents').map((st) => st.Resource)).toEqual([busArn]);
    for (const fn of [s.controlFunction, s.stepFunction, s.sweeperFunction, s.liveFunction])
      expect(allowed(fn, 'events:PutEvents')).toEqual([]);
    for (const fn of [s.liveFunction, s.streamFunction]) {
      const [manage] = allowed(fn, 'execute-api:ManageConnections');
      expect(JSON.stringify(manage?.Resource)).toContain(logicalId(s, s.live.webSocketApi));
      expect(JSON.stringify(manage?.Resource)).toContain('/@connections/*');
    }
    for (const fn of [s.controlFunction, s.stepFunction, s.sweeperFunction])
      expect(allowed(fn, 'execute-api:ManageConnections')).toEqual([]);
    expect(Object.keys(plain.template.toJSON().Outputs)).toEqual(
      expect.arrayContaining(['LiveUrl', 'EventBusName']),
    );
  });
});

describe('tools registered as data', () => {
  it('lets step invoke exactly the listed and the tagged functions and read exactly the listed secrets', () => {
    const arn = 'arn:aws:lambda:us-east-1:123456789012:function:refund:live';
    const secret = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:tool-key-AbCdEf';
    const built = build(
      {
        dataTools: {
          functionArns: [arn],
          taggedFunctions: true,
          secretArns: [secret],
          parameterNames: ['/tools/key'],
        },
      },
      { bundle: false },
    );
    const statements = ofType(built.resources, 'AWS::IAM::Policy').flatMap(
      ([, p]) => (p.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement,
    );
    const invokes = statements.filter((st) => st.Action === 'lambda:InvokeFunction');
    expect(invokes.map((st) => JSON.stringify(st.Resource))).toContain(JSON.stringify(arn));
    const tagged = invokes.find((st) => st.Condition !== undefined);
    expect(JSON.stringify(tagged?.Condition)).toContain('aws:ResourceTag/agent-runs-tool');
    expect(JSON.stringify(tagged?.Resource)).toContain(':function:*');
    const reads = statements.filter((st) => st.Action === 'secretsmanager:GetSecretValue');
    expect(reads.map((st) => st.Resource)).toContainEqual(secret);
    const params = statements.filter((st) => st.Action === 'ssm:GetParameter');
    expect(JSON.stringify(params.map((st) => st.Resource))).toContain('parameter/tools/key');
    expect(nagFindings(built.stack)).toEqual([]);
  });

  it('grants nothing for data tools unless told', () => {
    const statements = ofType(plain.resources, 'AWS::IAM::Policy').flatMap(
      ([, p]) => (p.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement,
    );
    // The only invoke grants are the stack's own (the scheduler invoking the sweeper).
    const invokes = statements.filter((st) => st.Action === 'lambda:InvokeFunction');
    expect(
      invokes.every((st) => st.Condition === undefined && JSON.stringify(st.Resource).includes('Fn::GetAtt')),
    ).toBe(true);
    expect(statements.filter((st) => st.Action === 'ssm:GetParameter')).toEqual([]);
  });
});

describe('IAM', () => {
  it('grants no wildcard action and no wildcard resource except X-Ray and ListStreams', () => {
    for (const [, policy] of ofType(plain.resources, 'AWS::IAM::Policy')) {
      for (const st of (policy.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement) {
        for (const action of asArray(st.Action)) expect(String(action)).not.toContain('*');
        // X-Ray and dynamodb:ListStreams (the stream event source) support no resource-level permissions.
        if (st.Resource === '*')
          expect(
            asArray(st.Action).every((a) => String(a).startsWith('xray:') || a === 'dynamodb:ListStreams'),
          ).toBe(true);
      }
    }
    plain.template.resourceCountIs('AWS::IAM::ManagedPolicy', 0);
    for (const [, role] of ofType(plain.resources, 'AWS::IAM::Role'))
      expect(role.ManagedPolicyArns).toBeUndefined();
  });

  /** Every (action, resource) pair a function's role is allowed, resources as JSON. */
  function grants(fn: LambdaFunction): Set<string> {
    const out = new Set<string>();
    for (const st of statementsOf(plain.resources, logicalId(plain.stack, fn.role as IConstruct))) {
      if (st.Effect !== 'Allow') continue;
      for (const action of asArray(st.Action)) {
        for (const resource of asArray(st.Resource)) out.add(`${String(action)} ${JSON.stringify(resource)}`);
      }
    }
    return out;
  }

  it('lets control and sweeper send to the step queue and the step function consume it', () => {
    const s = plain.stack;
    const queueArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(s, s.stepQueue), 'Arn'] });
    for (const fn of [s.controlFunction, s.sweeperFunction]) {
      expect(grants(fn)).toContain(`sqs:SendMessage ${queueArn}`);
      expect(grants(fn)).not.toContain(`sqs:ReceiveMessage ${queueArn}`);
    }
    for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']) {
      expect(grants(s.stepFunction)).toContain(`${action} ${queueArn}`);
    }
  });

  it('lets all three read and write table items and query its indexes, but not scan', () => {
    const s = plain.stack;
    const tableArn = { 'Fn::GetAtt': [logicalId(s, s.table), 'Arn'] };
    for (const fn of [s.controlFunction, s.stepFunction, s.sweeperFunction]) {
      const g = grants(fn);
      for (const action of ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem']) {
        expect(g).toContain(`dynamodb:${action} ${JSON.stringify(tableArn)}`);
      }
      for (const index of TABLE_DEFINITION.globalSecondaryIndexes) {
        const indexArn = { 'Fn::Join': ['', [tableArn, `/index/${index.indexName}`]] };
        expect(g).toContain(`dynamodb:Query ${JSON.stringify(indexArn)}`);
      }
      expect([...g].some((x) => x.startsWith('dynamodb:Scan'))).toBe(false);
    }
  });

  it('scopes bucket access to payloads/ and functions/, and only control writes reducer artifacts', () => {
    const s = plain.stack;
    const bucketArn = { 'Fn::GetAtt': [logicalId(s, s.payloadBucket), 'Arn'] };
    const under = (prefix: string) => JSON.stringify({ 'Fn::Join': ['', [bucketArn, `/${prefix}*`]] });
    const expected = (canWriteFunctions: boolean) =>
      [
        `s3:GetObject ${under('payloads/')}`,
        `s3:PutObject ${under('payloads/')}`,
        `s3:GetObject ${under('functions/')}`,
        ...(canWriteFunctions ? [`s3:PutObject ${under('functions/')}`] : []),
        `s3:ListBucket ${JSON.stringify(bucketArn)}`,
      ].sort();
    const s3Grants = (fn: LambdaFunction) => [...grants(fn)].filter((x) => x.startsWith('s3:')).sort();
    expect(s3Grants(s.controlFunction)).toEqual(expected(true));
    expect(s3Grants(s.stepFunction)).toEqual(expected(false));
    expect(s3Grants(s.sweeperFunction)).toEqual(expected(false));
  });

  it('scopes the prefixes to the keys the blob store and the stored registry write', async () => {
    const keys: string[] = [];
    const s3 = { send: async (command: { input: { Key?: string } }) => keys.push(command.input.Key ?? '') };
    await createS3BlobStore(
      lazyClient(async () => s3 as never),
      'bucket',
    ).put('payload', 'text/plain');
    expect(keys).toHaveLength(1);
    expect(keys[0]?.startsWith(OBJECT_PREFIXES.payloads)).toBe(true);
    expect(artifactObjectKey('0'.repeat(64)).startsWith(OBJECT_PREFIXES.functions)).toBe(true);
  });
});

describe('cdk-nag AwsSolutions', () => {
  it('reports no unacknowledged finding, with or without the JWT authorizer', () => {
    expect(nagFindings(plain.stack)).toEqual([]);
    expect(nagFindings(withJwt.stack)).toEqual([]);
  });

  it('acknowledges only the reviewed findings, each with a reason', () => {
    const acks = acknowledgments(plain.stack);
    for (const a of acks) expect(a.reason.length).toBeGreaterThan(20);
    const ids = [
      ...new Set(acks.map((a) => a.id.replace(/^annotation::/i, '').replace(/<[^>]+>/g, '<id>'))),
    ].sort();
    expect(ids).toEqual([
      'AwsSolutions-APIG4',
      'AwsSolutions-COG2',
      'AwsSolutions-COG3',
      'AwsSolutions-COG8',
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-IAM5[Resource::<id>/functions/*]',
      'AwsSolutions-IAM5[Resource::<id>/payloads/*]',
      'AwsSolutions-IAM5[Resource::<id>:*]',
      'AwsSolutions-IAM5[Resource::arn:<id>:execute-api:<id>:<id>:<id>/*/*/@connections/*]',
      'AwsSolutions-S1',
      'AwsSolutions-SQS3',
    ]);
  });
});

describe('CloudFormation schema check', () => {
  /** CloudFormation Validate, the offline validator (resource schemas bundled) aws-cdk-lib runs at synth. */
  const validator = createRequire(createRequire(import.meta.url).resolve('aws-cdk-lib'))(
    '@aws/cloudformation-validate',
  ) as {
    CompositeEngine: new () => {
      validateTemplate(template: unknown): {
        diagnostics: Array<{
          severity: string;
          ruleId: string;
          message: string;
          entity?: { logicalId?: string };
          propertyPath?: string;
        }>;
      };
      free(): void;
    };
    TemplateContent: new (content: string, name?: string) => unknown;
  };
  // Rules compile once per engine (seconds): one engine serves every check.
  let engine: InstanceType<typeof validator.CompositeEngine> | undefined;
  afterAll(() => engine?.free());

  /** The diagnostics at WARN and above, as `SEVERITY rule logicalId.propertyPath: message`. */
  function check(template: unknown): string[] {
    engine ??= new validator.CompositeEngine();
    const report = engine.validateTemplate(
      new validator.TemplateContent(JSON.stringify(template), 'template.json'),
    );
    return report.diagnostics
      .filter((d) => d.severity !== 'INFO' && d.severity !== 'DEBUG')
      .map(
        (d) => `${d.severity} ${d.ruleId} ${d.entity?.logicalId ?? ''}.${d.propertyPath ?? ''}: ${d.message}`,
      );
  }

  /**
   * W3005 (a DependsOn also implied by a GetAtt) is how CDK orders every Lambda function after
   * its role's policy; it is advice, not a schema finding.
   */
  const onlySchemaClean = (findings: string[]) => findings.filter((f) => !f.startsWith('WARN W3005'));

  it('finds no schema error or warning in the default template nor in one with every option on', {
    timeout: 120_000,
  }, () => {
    const everything = build(
      {
        iamAuth: true,
        consoleDomainPrefix: 'agent-runs-schema',
        bedrockModelIds: [
          'anthropic.claude-3-5-sonnet-20240620-v1:0',
          'us.anthropic.claude-3-7-sonnet-20250219-v1:0',
        ],
        openAi: { baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini' },
        alarmEmail: 'ops@example.com',
        tools: [
          {
            name: 'lookup',
            version: '1.0.0',
            input_schema: { type: 'object' },
            metadata: { mutating: false, replay_safe: true },
            target: { kind: 'lambda', function_name: 'lookup' },
          },
        ],
      },
      { bundle: false },
    );
    expect(onlySchemaClean(check(plain.template.toJSON()))).toEqual([]);
    expect(onlySchemaClean(check(everything.template.toJSON()))).toEqual([]);
    expect(onlySchemaClean(check(withJwt.template.toJSON()))).toEqual([]);
  });

  it('reports a template that breaks a resource schema (the check is live)', () => {
    const broken = structuredClone(plain.template.toJSON()) as { Resources: Resources };
    const queueId = logicalId(plain.stack, plain.stack.stepQueue);
    const queue = broken.Resources[queueId];
    if (queue?.Properties === undefined) throw new Error('no queue');
    queue.Properties.VisibilityTimeout = 'soon';
    queue.Properties.NotAProperty = true;
    const findings = check(broken);
    const errors = findings.filter((f) => /^(ERROR|FATAL) /.test(f));
    expect(errors.some((f) => f.includes(`${queueId}.Properties.VisibilityTimeout`))).toBe(true);
    expect(errors.some((f) => f.includes('NotAProperty'))).toBe(true);
  });
});

describe('bundles', () => {
  it('ship each function as ESM chunks, with the QuickJS module and the Starlark runtime only where reducers run', () => {
    const s = plain.stack;
    const artifact = readFileSync(AGENT_LOOP_ARTIFACT_URL);
    // The control function checks reducer upgrades (POST /admin/reducers/check), on first use.
    const runsReducers = new Set([s.controlFunction, s.stepFunction, s.sweeperFunction]);
    for (const fn of [
      s.controlFunction,
      s.stepFunction,
      s.sweeperFunction,
      s.liveFunction,
      s.streamFunction,
    ]) {
      const code = plain.resources[logicalId(s, fn)]?.Properties?.Code as { S3Key: string };
      const dir = join(plain.outdir, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
      expect(existsSync(join(dir, 'index.mjs'))).toBe(true);
      const chunks = readdirSync(dir).filter((f) => f.endsWith('.mjs'));
      const bundled = chunks.map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
      for (const f of chunks) expect(existsSync(join(dir, `${f}.map`))).toBe(true);
      // The maps are not linked: a cold start never reads them.
      expect(bundled).not.toContain('sourceMappingURL');
      expect(readFileSync(join(dir, 'agent-loop.js')).equals(artifact)).toBe(true);
      if (runsReducers.has(fn)) {
        expect(existsSync(join(dir, 'emscripten-module.wasm'))).toBe(true);
        expect(
          readFileSync(join(dir, 'starlark-runtime.wasm')).equals(readFileSync(STARLARK_RUNTIME_URL)),
        ).toBe(true);
        expect(readFileSync(join(dir, 'wasm_exec.js')).equals(readFileSync(GO_WASM_EXEC_URL))).toBe(true);
      } else {
        expect(existsSync(join(dir, 'emscripten-module.wasm'))).toBe(false);
        expect(existsSync(join(dir, 'starlark-runtime.wasm'))).toBe(false);
        expect(bundled).not.toContain('quickjs-emscripten');
      }
      // Loading the module runs its top level (runtime built from the environment, no I/O).
      const exported = execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "const m = await import('./index.mjs'); console.log(typeof m.handler);",
        ],
        {
          cwd: dir,
          encoding: 'utf8',
          env: {
            PATH: process.env.PATH ?? '',
            AWS_REGION: 'us-east-1',
            TABLE_NAME: 'agent-runs',
            STEP_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/agent-runs-step',
            PAYLOAD_BUCKET: 'agent-runs-payloads',
          },
        },
      );
      expect(exported.trim()).toBe('function');
    }
  });

  it('ship the web console, built from console/, in the control function only', () => {
    const s = plain.stack;
    const dirOf = (fn: LambdaFunction) => {
      const code = plain.resources[logicalId(s, fn)]?.Properties?.Code as { S3Key: string };
      return join(plain.outdir, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
    };
    const index = readFileSync(join(dirOf(s.controlFunction), 'console', 'index.html'), 'utf8');
    const script = /src="\/console\/(assets\/[^"]+\.js)"/.exec(index)?.[1];

    expect(script).toBeDefined();
    expect(existsSync(join(dirOf(s.controlFunction), 'console', script ?? ''))).toBe(true);
    expect(existsSync(join(dirOf(s.stepFunction), 'console'))).toBe(false);
  });

  it('run the sandboxed agent reducer and a Starlark reducer from a bundle built with the same options', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const m = await import('./index.mjs'); console.log(JSON.stringify(await m.handler()));",
      ],
      { cwd: probeAssetDir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } },
    );
    expect(JSON.parse(out)).toEqual({
      artifact_hash: hashArtifactBytes(readFileSync(AGENT_LOOP_ARTIFACT_URL)),
      result_kind: 'answered',
      starlark: { seen: 42 },
    });
  });
});
