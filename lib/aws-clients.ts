/**
 * Builds the AWS SDK v3 clients the adapters use, for real AWS or for the local emulators.
 * Without endpoints the SDK's own resolution applies (Lambda: region and credentials from the
 * environment). With endpoints (DynamoDB Local, fauxqs) S3 switches to path-style URLs, so
 * `http://127.0.0.1:{port}/{bucket}/{key}` works without wildcard DNS.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
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

/** The SDK clients of one process. `doc` wraps `dynamo` with plain-JS marshalling. */
export interface AwsClients {
  dynamo: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  sqs: SQSClient;
  s3: S3Client;
  /** Invokes Lambda tools (lib/tools/lambda-handler.ts). */
  lambda: LambdaClient;
  /** Closes every client's sockets (call at shutdown; the clients are unusable afterwards). */
  destroy(): void;
}

/** Creates DynamoDB (raw + document), SQS, S3 and Lambda clients for the given endpoints. Never does I/O. */
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
  const s3 = new S3Client({
    ...common,
    ...(endpoints.s3Endpoint !== undefined && { endpoint: endpoints.s3Endpoint, forcePathStyle: true }),
  });
  const lambda = new LambdaClient({
    ...common,
    ...(endpoints.lambdaEndpoint !== undefined && { endpoint: endpoints.lambdaEndpoint }),
  });
  return {
    dynamo,
    doc,
    sqs,
    s3,
    lambda,
    destroy() {
      dynamo.destroy(); // also ends `doc`, which shares its handler
      sqs.destroy();
      s3.destroy();
      lambda.destroy();
    },
  };
}
