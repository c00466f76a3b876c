/**
 * Builds the AWS SDK v3 clients the adapters use, for real AWS or for the local emulators.
 * Without endpoints the SDK's own resolution applies (Lambda: region and credentials from the
 * environment). With endpoints (DynamoDB Local, fauxqs) S3 switches to path-style URLs, so
 * `http://127.0.0.1:{port}/{bucket}/{key}` works without wildcard DNS. The S3 and Lambda clients
 * are lazy (LazyClient): their packages are imported and the clients built on the first `get()`,
 * so a Lambda function that reads no payload and invokes no tool never loads them; DynamoDB and
 * SQS, which every function uses, are built here.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** Static credentials (the emulators accept any). */
export interface StaticCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** Where the clients talk to. Every field is optional: absent means "real AWS defaults". */
export interface AwsEndpoints {
  region?: string | undefined;
  credentials?: StaticCredentials | undefined;
  /** e.g. `http://127.0.0.1:8000` (DynamoDB Local). */
  dynamoEndpoint?: string | undefined;
  /** e.g. `http://127.0.0.1:4566` (fauxqs). When set, requests go here whatever the QueueUrl's host (fauxqs issues `http://sqs.{region}.localhost:{port}/...`, a name that need not resolve). */
  sqsEndpoint?: string | undefined;
  /** e.g. `http://127.0.0.1:4566` (fauxqs); setting it turns on path-style addressing. */
  s3Endpoint?: string | undefined;
  /** Where Lambda tools are invoked (default: the SDK's own resolution). */
  lambdaEndpoint?: string | undefined;
}

/** An SDK client whose package is imported, and the client built, on the first `get()`. */
export interface LazyClient<C> {
  /** The client (built once; a failed import rejects and is tried again on the next call). */
  get(): Promise<C>;
  /** Calls `fn` with the client when it is built (at once if it already is): tracing hooks. */
  onBuilt(fn: (client: C) => void): void;
  /** The client if it has been built. */
  built(): C | undefined;
}

/** A LazyClient over `load`, which imports the package and builds the client. */
export function lazyClient<C>(load: () => Promise<C>): LazyClient<C> {
  let pending: Promise<C> | undefined;
  let client: C | undefined;
  const hooks: Array<(client: C) => void> = [];
  return {
    get() {
      pending ??= load().then(
        (c) => {
          client = c;
          for (const fn of hooks) fn(c);
          return c;
        },
        (error: unknown) => {
          pending = undefined;
          throw error;
        },
      );
      return pending;
    },
    onBuilt(fn) {
      hooks.push(fn);
      if (client !== undefined) fn(client);
    },
    built: () => client,
  };
}

/** The SDK clients of one process. `doc` wraps `dynamo` with plain-JS marshalling. */
export interface AwsClients {
  dynamo: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  sqs: SQSClient;
  /** Payloads and reducer artifacts (lib/blobs, lib/sandbox/stored-registry.ts). */
  s3: LazyClient<S3Client>;
  /** Invokes Lambda tools (lib/tools/adapters/lambda.ts). */
  lambda: LazyClient<LambdaClient>;
  /** Closes every client's sockets (call at shutdown; the clients are unusable afterwards). */
  destroy(): void;
}

/** Creates DynamoDB (raw + document) and SQS clients, and lazy S3 and Lambda ones, for the given endpoints. Never does I/O. */
export function createAwsClients(endpoints: AwsEndpoints = {}): AwsClients {
  const common = {
    ...(endpoints.region !== undefined && { region: endpoints.region }),
    ...(endpoints.credentials !== undefined && { credentials: endpoints.credentials }),
  };
  const dynamo = new DynamoDBClient({
    ...common,
    ...(endpoints.dynamoEndpoint !== undefined && { endpoint: endpoints.dynamoEndpoint }),
  });
  const doc = DynamoDBDocumentClient.from(dynamo, {
    marshallOptions: { removeUndefinedValues: true },
  });
  const sqs = new SQSClient({
    ...common,
    ...(endpoints.sqsEndpoint !== undefined && { endpoint: endpoints.sqsEndpoint }),
  });
  const s3 = lazyClient(
    async () =>
      new (await import('@aws-sdk/client-s3')).S3Client({
        ...common,
        ...(endpoints.s3Endpoint !== undefined && { endpoint: endpoints.s3Endpoint, forcePathStyle: true }),
      }),
  );
  const lambda = lazyClient(
    async () =>
      new (await import('@aws-sdk/client-lambda')).LambdaClient({
        ...common,
        ...(endpoints.lambdaEndpoint !== undefined && { endpoint: endpoints.lambdaEndpoint }),
      }),
  );
  return {
    dynamo,
    doc,
    sqs,
    s3,
    lambda,
    destroy() {
      dynamo.destroy(); // also ends `doc`, which shares its handler
      sqs.destroy();
      s3.built()?.destroy();
      lambda.built()?.destroy();
    },
  };
}
