/**
 * Live events and run lifecycle notifications in AWS: the WebSocket API (its $connect,
 * $disconnect and $default routes to the live function, which verifies the bearer token itself:
 * a WebSocket API has no JWT authorizer), the table's stream read by the stream function (run
 * record changes only, in order per shard, partial batch failures reported, a record that keeps
 * failing sent to a dead-letter queue), and the event bus the stream function publishes
 * `Agent Run Status Changed` to. The same protocol runs on the local stack (lib/local/live.ts).
 * docs/contracts/run-lifecycle.md, "over HTTP, WebSocket"; docs/architecture.md, "The seams of a
 * step" (notifications go through an outbox: no writer knows who listens).
 */
import { CfnElement, Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { LogGroupLogDestination, WebSocketApi, WebSocketStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { FilterCriteria, type Function as LambdaFunction, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../lib/config.ts';
import { RUN_RECORD_FILTER } from '../lib/live/stream-records.ts';
import { acknowledge } from './nag.ts';

/** The WebSocket stage's name (the callback URL ends in it). */
export const LIVE_STAGE_NAME = 'live';
/** Stream records per invocation of the stream function, and how long Lambda waits to fill a batch. */
const STREAM_BATCH_SIZE = 100;
const STREAM_MAX_BATCHING_WINDOW = Duration.seconds(0);
/** Attempts of a failing stream record before it goes to the dead-letter queue. */
const STREAM_RETRY_ATTEMPTS = 10;

export interface LiveProps {
  readonly table: Table;
  /** $connect / $disconnect / $default: authenticates, subscribes, replies. */
  readonly liveFunction: LambdaFunction;
  /** The table's stream consumer: notifications and the fan-out. */
  readonly streamFunction: LambdaFunction;
  /** Who may connect: the HTTP API's JWT issuer and audiences. */
  readonly jwtIssuer: string;
  readonly jwtAudience: readonly string[];
  readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export class Live extends Construct {
  readonly webSocketApi: WebSocketApi;
  readonly stage: WebSocketStage;
  readonly eventBus: EventBus;
  /** Stream records the stream function gave up on (their shard position, for a replay). */
  readonly streamDeadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: LiveProps) {
    super(scope, id);
    const { liveFunction, streamFunction } = props;

    this.webSocketApi = new WebSocketApi(this, 'WebSocketApi', {
      description: 'Agent Runs live events: subscribe to a run from a seq, receive its events in order',
      connectRouteOptions: {
        integration: new WebSocketLambdaIntegration('ConnectIntegration', liveFunction),
      },
      disconnectRouteOptions: {
        integration: new WebSocketLambdaIntegration('DisconnectIntegration', liveFunction),
      },
      defaultRouteOptions: {
        integration: new WebSocketLambdaIntegration('DefaultIntegration', liveFunction),
      },
    });
    const accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.webSocketApi,
      stageName: LIVE_STAGE_NAME,
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            connectionId: '$context.connectionId',
            routeKey: '$context.routeKey',
            eventType: '$context.eventType',
            status: '$context.status',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    for (const route of this.webSocketApi.node.children) {
      if (route.node.id.endsWith('-Route'))
        acknowledge(
          route,
          'AwsSolutions-APIG4',
          'The live function authenticates every connect itself: it verifies the bearer token against the JWT issuer of the HTTP API (a WebSocket API has no JWT authorizer) and refuses the upgrade with 401; messages on an open connection act as the caller authenticated at connect.',
        );
    }

    this.eventBus = new EventBus(this, 'EventBus', {
      description:
        'Agent Runs lifecycle notifications (source agent-runs, detail-type Agent Run Status Changed)',
    });
    this.eventBus.grantPutEventsTo(streamFunction);

    this.streamDeadLetterQueue = new Queue(this, 'StreamDeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(
      this.streamDeadLetterQueue,
      'AwsSolutions-SQS3',
      'This queue is the dead-letter destination of the stream event source mapping; it has no dead-letter queue of its own.',
    );
    streamFunction.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: StartingPosition.LATEST,
        batchSize: STREAM_BATCH_SIZE,
        maxBatchingWindow: STREAM_MAX_BATCHING_WINDOW,
        reportBatchItemFailures: true,
        retryAttempts: STREAM_RETRY_ATTEMPTS,
        parallelizationFactor: 1,
        filters: [FilterCriteria.filter(RUN_RECORD_FILTER)],
        onFailure: new SqsDlq(this.streamDeadLetterQueue),
      }),
    );

    // The live function authenticates connections; the stream function publishes to the bus.
    liveFunction.addEnvironment(ENV.LIVE_CALLBACK_URL, this.stage.callbackUrl);
    liveFunction.addEnvironment(ENV.JWT_ISSUER, props.jwtIssuer);
    liveFunction.addEnvironment(ENV.JWT_AUDIENCES, props.jwtAudience.join(','));
    streamFunction.addEnvironment(ENV.LIVE_CALLBACK_URL, this.stage.callbackUrl);
    streamFunction.addEnvironment(ENV.EVENT_BUS_NAME, this.eventBus.eventBusName);
    for (const fn of [liveFunction, streamFunction]) {
      this.webSocketApi.grantManageConnections(fn);
      if (fn.role !== undefined)
        acknowledge(
          fn.role,
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${this.logicalId(this.webSocketApi)}>/*/*/@connections/*]`,
          'execute-api:ManageConnections on this WebSocket API only; connection ids are assigned by API Gateway at connect, so they cannot be named in advance.',
        );
    }
  }

  /** The CloudFormation logical id of a construct's default child, as cdk-nag names it in findings. */
  private logicalId(construct: Construct): string {
    const child = construct.node.defaultChild;
    if (!(child instanceof CfnElement))
      throw new Error(`${construct.node.path} has no CloudFormation resource`);
    return Stack.of(construct).getLogicalId(child);
  }
}
