/**
 * The three Lambda bundles as deployed: synthesized by the CDK stack (cdk/bundling.ts, esbuild,
 * the AWS SDK inside), each loaded in a child process that plays a warm Lambda container
 * (test/infra/lambda-container.ts) with the environment the template gives the function (its
 * Refs resolved to DynamoDB Local, fauxqs and a fresh step queue), and invoked with the events
 * AWS sends: HTTP API v2 events with JWT authorizer claims (control), SQS batches with a poison
 * record (step), an EventBridge Scheduler event (sweeper). The run uses the default agent
 * reducer, a tool registered by configuration (the stack's `tools`, AGENT_RUNS_TOOLS) served
 * by a local HTTP server, and a scripted OpenAI-compatible model whose API key is read from a
 * local stand-in for Secrets Manager.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../cdk/bundling.ts';
import { AgentRunsStack } from '../../cdk/stack.ts';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { createTableInput } from '../../lib/store/table.ts';
import { type FakeServer, startFakeServer } from '../fixtures/models/fake-server.ts';
import { uniqueSubject } from '../support/engine.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
/**
 * A table of the bundles' own: the sweeper bundle sweeps every shard of its table, and in the
 * shared one it would take over the expired leases other test files leave (their crash tests).
 */
const tableName = `bundles-${randomUUID()}`;
const repoRoot = fileURLToPath(REPO_ROOT);
const cdkContext = JSON.parse(readFileSync(join(repoRoot, 'cdk.json'), 'utf8')).context as Record<
  string,
  unknown
>;

type FunctionName = 'control' | 'step' | 'sweeper';
const SECRET_NAME = 'agent-runs/openai-test-key';
const API_KEY = 'sk-bundle-test';

interface Container {
  invoke(event: unknown): Promise<{ ok: boolean; value?: unknown; error?: string }>;
  stdout(): string;
  stop(): void;
}

let outdir: string;
let queueUrl: string;
let model: FakeServer;
let tool: FakeServer;
let secrets: FakeServer;
const containers: Partial<Record<FunctionName, Container>> = {};
const bundles: Partial<Record<FunctionName, { dir: string; env: Record<string, string> }>> = {};

/** A tool call turn and a final text turn, in OpenAI chat-completions form. */
const toolCallTurn = JSON.stringify({
  id: 'chatcmpl-1',
  choices: [
    {
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'lookup_order', arguments: '{"order_id":"A-17"}' },
          },
        ],
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 40, completion_tokens: 9 },
});
const finalTurn = JSON.stringify({
  id: 'chatcmpl-2',
  choices: [{ message: { role: 'assistant', content: 'Order A-17 has shipped.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 60, completion_tokens: 7 },
});

/** Resolves a template environment value: literals as they are, Refs to the local resources. */
function resolveEnv(
  variables: Record<string, unknown>,
  refs: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(variables)) {
    if (typeof value === 'string') out[key] = value;
    else {
      const ref = (value as { Ref?: string }).Ref;
      const resolved = ref === undefined ? undefined : refs[ref];
      if (resolved === undefined) throw new Error(`cannot resolve ${key}: ${JSON.stringify(value)}`);
      out[key] = resolved;
    }
  }
  return out;
}

function startContainer(name: FunctionName): Promise<Container> {
  const bundle = bundles[name];
  if (bundle === undefined) throw new Error(`no bundle for ${name}`);
  let output = '';
  const child: ChildProcess = fork(
    fileURLToPath(new URL('../infra/lambda-container.ts', import.meta.url)),
    [bundle.dir],
    {
      execPath: process.execPath,
      cwd: bundle.dir,
      env: bundle.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  let next = 0;
  const pending = new Map<number, (reply: { ok: boolean; value?: unknown; error?: string }) => void>();
  return new Promise((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`${name} container exited (${code}): ${output.slice(-2000)}`)),
    );
    child.on(
      'message',
      (message: { ready?: boolean; id?: number; ok?: boolean; value?: unknown; error?: string }) => {
        if (message.ready === true) {
          resolve({
            invoke(event) {
              const id = next++;
              child.send({ id, event });
              return new Promise((done) => pending.set(id, done));
            },
            stdout: () => output,
            stop: () => child.kill(),
          });
          return;
        }
        if (message.id !== undefined) {
          pending.get(message.id)?.({ ok: message.ok === true, value: message.value, error: message.error });
          pending.delete(message.id);
        }
      },
    );
  });
}

async function container(name: FunctionName): Promise<Container> {
  containers[name] ??= await startContainer(name);
  return containers[name];
}

/** An API Gateway HTTP API (payload 2.0) event, as the JWT authorizer passes it. */
function httpEvent(
  method: string,
  path: string,
  options: { claims?: Record<string, unknown>; body?: unknown; query?: string } = {},
): Record<string, unknown> {
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: path === '/health' ? 'GET /health' : 'ANY /{proxy+}',
    rawPath: path,
    rawQueryString: options.query ?? '',
    headers: {
      host: 'abcdef1234.execute-api.us-east-1.amazonaws.com',
      'content-type': 'application/json',
      authorization: 'Bearer eyJraWQiOi...',
      'x-forwarded-proto': 'https',
    },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abcdef1234',
      domainName: 'abcdef1234.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'abcdef1234',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'bundle-test' },
      requestId: randomUUID(),
      routeKey: 'ANY /{proxy+}',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
      ...(options.claims !== undefined
        ? { authorizer: { jwt: { claims: options.claims, scopes: null } } }
        : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body), isBase64Encoded: false } : {}),
  };
}

const USER = { sub: 'user-7', 'cognito:groups': '[admin]', token_use: 'access', client_id: 'app-client' };

async function http(method: string, path: string, options: Parameters<typeof httpEvent>[2] = {}) {
  const reply = await (await container('control')).invoke(httpEvent(method, path, options));
  if (!reply.ok) throw new Error(`control failed: ${reply.error}`);
  const value = reply.value as { statusCode: number; body: string };
  return { status: value.statusCode, body: JSON.parse(value.body) as Record<string, unknown> };
}

/** The SQS event Lambda's event source mapping delivers for these messages. */
function sqsEvent(messages: Array<{ MessageId?: string; ReceiptHandle?: string; Body?: string }>) {
  return {
    Records: messages.map((m) => ({
      messageId: m.MessageId ?? randomUUID(),
      receiptHandle: m.ReceiptHandle ?? 'poison-receipt',
      body: m.Body ?? '',
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(Date.now()),
        SenderId: 'AROAEXAMPLE',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:agent-runs-step',
      awsRegion: 'us-east-1',
    })),
  };
}

beforeAll(async () => {
  await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName)));
  model = await startFakeServer();
  tool = await startFakeServer();
  secrets = await startFakeServer();
  const created = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `bundles-${randomUUID().slice(0, 12)}` }),
  );
  queueUrl = created.QueueUrl ?? '';

  outdir = mkdtempSync(join(tmpdir(), 'agent-runs-bundles-'));
  const app = new App({ outdir, builtinCloudFormationValidation: false, context: cdkContext });
  const stack = new AgentRunsStack(app, 'AgentRunsBundles', {
    deletionProtection: false,
    openAi: { baseUrl: `${model.url}/v1`, model: 'scripted-model', apiKeySecret: SECRET_NAME },
    tools: [
      {
        name: 'lookup_order',
        version: '1.0.0',
        description: 'Looks an order up by id.',
        input_schema: {
          type: 'object',
          properties: { order_id: { type: 'string' } },
          required: ['order_id'],
        },
        metadata: { mutating: false, replay_safe: true },
        target: { kind: 'http', url: `${tool.url}/lookup` },
      },
    ],
  });
  const template = app.synth().getStackByName(stack.stackName).template as {
    Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  };
  const refs = {
    [stack.getLogicalId(stack.table.node.defaultChild as never)]: tableName,
    [stack.getLogicalId(stack.stepQueue.node.defaultChild as never)]: queueUrl,
    [stack.getLogicalId(stack.payloadBucket.node.defaultChild as never)]: local.bucketName,
  };
  for (const name of ['control', 'step', 'sweeper'] as const) {
    const fn = { control: stack.controlFunction, step: stack.stepFunction, sweeper: stack.sweeperFunction }[
      name
    ];
    const props = template.Resources[stack.getLogicalId(fn.node.defaultChild as never)]?.Properties ?? {};
    const code = props.Code as { S3Key: string };
    const variables = (props.Environment as { Variables: Record<string, unknown> }).Variables;
    bundles[name] = {
      dir: join(outdir, `asset.${code.S3Key.replace(/\.zip$/, '')}`),
      env: {
        // What the Lambda runtime sets, then the function's own environment from the template.
        PATH: process.env.PATH ?? '',
        TZ: ':UTC',
        AWS_REGION: local.region,
        AWS_DEFAULT_REGION: local.region,
        AWS_ACCESS_KEY_ID: local.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: local.credentials.secretAccessKey,
        AWS_LAMBDA_FUNCTION_NAME: `AgentRuns-${name}`,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(props.MemorySize),
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
        ...resolveEnv(variables, refs),
        // Local stand-ins instead of the AWS endpoints (X-Ray is not emulated).
        AWS_ENDPOINT_URL_DYNAMODB: local.dynamoEndpoint,
        AWS_ENDPOINT_URL_SQS: local.sqsEndpoint,
        AWS_ENDPOINT_URL_S3: local.s3Endpoint,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.url,
        POWERTOOLS_TRACE_ENABLED: 'false',
        SWEEP_PASS_GAP_MS: '50',
      },
    };
  }
}, 240_000);

afterAll(async () => {
  for (const c of Object.values(containers)) c?.stop();
  await Promise.all([model?.close(), tool?.close(), secrets?.close()]);
  await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
  clients.destroy();
  if (outdir !== undefined) rmSync(outdir, { recursive: true, force: true });
});

describe('the bundles, invoked as Lambda invokes them', () => {
  let runId = '';

  it('control: answers 401 without authorizer claims, lists the configured tool, and creates a run', async () => {
    expect((await http('GET', '/runs/r-1')).status).toBe(401);
    expect((await http('GET', '/health')).body).toEqual({ status: 'ok' });

    const tools = await http('GET', '/v1/tools', { claims: USER });
    expect(tools.status).toBe(200);
    expect((tools.body.tools as Array<{ name: string }>).map((t) => t.name)).toContain('lookup_order');

    const created = await http('POST', '/runs', {
      claims: USER,
      body: {
        subject: uniqueSubject('user-7'),
        reducer: { function_path: AGENT_LOOP_PATH },
        input: 'Where is my order A-17?',
        context: {
          instructions: 'You help with orders.',
          tools: [{ name: 'lookup_order', schema: { type: 'object' }, mutating: false, replay_safe: true }],
          mode: 'task',
        },
        executor_config: { model_turn_function: '/lib/models/openai' },
      },
    });
    expect(created.status).toBe(201);
    const run = created.body.run as { run_id: string; principal: unknown };
    expect(run.principal).toEqual({ kind: 'user', id: 'user-7', groups: ['admin'] });
    runId = run.run_id;
  });

  it('step: acknowledges a poison record and drives the run through the tool to completion', async () => {
    secrets.reply({
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({ Name: SECRET_NAME, SecretString: API_KEY }),
    });
    model.reply({ status: 200, body: toolCallTurn }, { status: 200, body: finalTurn });
    tool.reply({ status: 200, body: JSON.stringify({ order_id: 'A-17', status: 'shipped' }) });
    const step = await container('step');

    let poisoned = false;
    let status = '';
    for (let round = 0; round < 20 && status !== 'completed'; round++) {
      const received = await clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      const messages = received.Messages ?? [];
      if (messages.length > 0 || !poisoned) {
        const batch = poisoned
          ? messages
          : [...messages, { MessageId: 'poison-1', Body: '{"not":"a step message"' }];
        const reply = await step.invoke(sqsEvent(batch));
        expect(reply.ok, reply.error).toBe(true);
        const failures = (reply.value as { batchItemFailures: Array<{ itemIdentifier: string }> })
          .batchItemFailures;
        // The poison record is acknowledged (it can never succeed), never retried.
        expect(failures.map((f) => f.itemIdentifier)).not.toContain('poison-1');
        poisoned = true;
        // What the event source mapping does with the records the handler did not report.
        const done = messages.filter((m) => !failures.some((f) => f.itemIdentifier === m.MessageId));
        if (done.length > 0) {
          await clients.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
            }),
          );
        }
      }
      status = String((await http('GET', `/runs/${runId}`, { claims: USER })).body.status);
    }

    const run = (await http('GET', `/runs/${runId}`, { claims: USER })).body;
    expect(run).toMatchObject({ status: 'completed', summary: 'Order A-17 has shipped.' });
    // The tool was called once, over HTTP, with the model's arguments.
    expect(tool.received).toHaveLength(1);
    expect(JSON.parse(tool.received[0]?.body ?? '{}')).toMatchObject({ args: { order_id: 'A-17' } });
    // Both model turns went to the scripted endpoint with the key from the secret.
    expect(model.received.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${API_KEY}`,
      `Bearer ${API_KEY}`,
    ]);
    expect(secrets.received[0]?.headers['x-amz-target']).toBe('secretsmanager.GetSecretValue');
    const events = (await http('GET', `/runs/${runId}/events`, { claims: USER, query: 'limit=200' })).body
      .events as Array<{ kind: string; data: Record<string, unknown> }>;
    const kinds = events.map((e) => e.kind);
    expect(kinds).toContain('tool_result');
    expect(events.find((e) => e.kind === 'tool_result')?.data.tool).toBe('lookup_order');
    // The handler logged and counted the poison record (Powertools JSON logs and EMF on stdout).
    expect(step.stdout()).toContain('malformed step message acknowledged');
    expect(step.stdout()).toContain('"MalformedStepMessages"');
  });

  it('sweeper: runs its two passes for an EventBridge Scheduler event and reports them', async () => {
    const sweeper = await container('sweeper');
    const reply = await sweeper.invoke({
      version: '0',
      id: randomUUID(),
      'detail-type': 'Scheduled Event',
      source: 'aws.scheduler',
      account: '123456789012',
      time: new Date().toISOString(),
      region: 'us-east-1',
      resources: ['arn:aws:scheduler:us-east-1:123456789012:schedule/default/AgentRunsSweeper'],
      detail: '{}',
    });
    expect(reply.ok, reply.error).toBe(true);
    const result = reply.value as { passes: unknown[]; totals: Record<string, number> };
    expect(result.passes).toHaveLength(2);
    expect(result.totals).toMatchObject({
      taken_over: 0,
      woken: expect.any(Number),
      examined: expect.any(Number),
    });
  });
});
