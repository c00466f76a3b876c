/**
 * What an operator watches: the alarms (step queue age, DLQ depth, API 5xx, Lambda throttles,
 * step and sweeper errors, lease takeovers), the SNS topic they notify (created, encrypted,
 * when none is given; optionally with an email subscription), and a CloudWatch dashboard of
 * the runtime's own metrics (lib/handlers/observability.ts METRIC) beside the AWS ones.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRIC, METRICS_NAMESPACE, type MetricName } from '../lib/handlers/observability.ts';

/** Powertools service names (POWERTOOLS_SERVICE_NAME): the `service` dimension of the runtime's metrics. */
export interface ServiceNames {
  readonly control: string;
  readonly step: string;
  readonly sweeper: string;
}

export interface OperationsProps {
  readonly functions: {
    readonly control: LambdaFunction;
    readonly step: LambdaFunction;
    readonly sweeper: LambdaFunction;
  };
  readonly serviceNames: ServiceNames;
  readonly stepQueue: Queue;
  readonly deadLetterQueue: Queue;
  readonly httpApi: HttpApi;
  /** An existing topic; default: the stack creates one. */
  readonly alarmTopicArn?: string | undefined;
  /** Subscribes this address to the created topic (it must confirm by email). */
  readonly alarmEmail?: string | undefined;
  /** Takeovers (sum over 5 minutes) at or above which the takeover alarm fires. Default 1. */
  readonly takeoverAlarmThreshold?: number | undefined;
  /** Age of the oldest step message (s) at or above which the queue age alarm fires. Default 900. */
  readonly queueAgeAlarmSeconds?: number | undefined;
  readonly removalPolicy: RemovalPolicy;
}

/** Default threshold of the queue age alarm: 15 minutes (a step normally starts within seconds). */
export const DEFAULT_QUEUE_AGE_ALARM_SECONDS = 900;

export interface OperationsAlarms {
  readonly queueAge: Alarm;
  readonly dlqDepth: Alarm;
  readonly api5xx: Alarm;
  readonly throttles: Alarm;
  readonly stepErrors: Alarm;
  readonly sweeperErrors: Alarm;
  readonly takeovers: Alarm;
}

export class Operations extends Construct {
  readonly topic: ITopic;
  readonly alarms: OperationsAlarms;
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    this.topic = this.topicOf(props);
    this.alarms = this.createAlarms(props);
    const action = new SnsAction(this.topic);
    for (const alarm of Object.values(this.alarms)) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }
    this.dashboard = this.createDashboard(props);
  }

  /**
   * The given topic, or a new one encrypted with its own key (rotated; CloudWatch may use it to
   * publish, which the AWS-managed SNS key does not allow) that denies publishing without TLS.
   */
  private topicOf(props: OperationsProps): ITopic {
    if (props.alarmTopicArn !== undefined) return Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn);
    const key = new Key(this, 'AlarmTopicKey', {
      description: 'Encrypts the Agent Runs alarm topic',
      enableKeyRotation: true,
      removalPolicy:
        props.removalPolicy === RemovalPolicy.RETAIN ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    key.grant(new ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    const topic = new Topic(this, 'AlarmTopic', {
      displayName: 'Agent Runs alarms',
      masterKey: key,
      enforceSSL: true,
    });
    if (props.alarmEmail !== undefined) topic.addSubscription(new EmailSubscription(props.alarmEmail));
    return topic;
  }

  private createAlarms(props: OperationsProps): OperationsAlarms {
    const { functions } = props;
    const fiveMinutes = Duration.minutes(5);
    return {
      queueAge: this.alarm('QueueAgeAlarm', {
        description:
          'The oldest step message waits too long: the step function is not keeping up, or is failing.',
        metric: props.stepQueue.metricApproximateAgeOfOldestMessage({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        threshold: props.queueAgeAlarmSeconds ?? DEFAULT_QUEUE_AGE_ALARM_SECONDS,
        evaluationPeriods: 5,
      }),
      dlqDepth: this.alarm('DlqDepthAlarm', {
        description: 'Step messages reached the DLQ: a step failed maxReceiveCount times.',
        metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        threshold: 1,
      }),
      api5xx: this.alarm('Api5xxAlarm', {
        description: 'The HTTP API answered 5xx (internal errors, store unavailable, integration failures).',
        metric: props.httpApi.metricServerError({ period: fiveMinutes, statistic: 'Sum' }),
        threshold: 5,
      }),
      throttles: this.alarm('ThrottlesAlarm', {
        description: 'Lambda throttled invocations of the control, step or sweeper function.',
        metric: new MathExpression({
          expression: 'control + step + sweeper',
          usingMetrics: {
            control: functions.control.metricThrottles({ statistic: 'Sum' }),
            step: functions.step.metricThrottles({ statistic: 'Sum' }),
            sweeper: functions.sweeper.metricThrottles({ statistic: 'Sum' }),
          },
          period: fiveMinutes,
          label: 'Throttles (all functions)',
        }),
        threshold: 1,
      }),
      stepErrors: this.alarm('StepErrorsAlarm', {
        description: 'The step function failed (an invocation error, not a partial batch failure).',
        metric: functions.step.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
        threshold: 1,
      }),
      sweeperErrors: this.alarm('SweeperErrorsAlarm', {
        description:
          'The sweeper failed twice in 10 minutes: expired leases and due wakes are not being handled.',
        metric: functions.sweeper.metricErrors({ period: Duration.minutes(10), statistic: 'Sum' }),
        threshold: 2,
      }),
      takeovers: this.alarm('TakeoversAlarm', {
        description: 'The sweeper took over expired leases: workers died or overran their lease.',
        metric: this.runtimeMetric(METRIC.takeovers, props.serviceNames.sweeper, fiveMinutes),
        threshold: props.takeoverAlarmThreshold ?? 1,
      }),
    };
  }

  /** One widget row each: runtime steps, store and reducer health, the sweeper, the queues, the API, the functions. */
  private createDashboard(props: OperationsProps): Dashboard {
    const { serviceNames: svc, functions } = props;
    const period = Duration.minutes(1);
    const runtime = (names: MetricName[], service: string) =>
      names.map((name) => this.runtimeMetric(name, service, period));
    const perFunction = (metric: (fn: LambdaFunction) => IMetric) =>
      (['control', 'step', 'sweeper'] as const).map((name) => metric(functions[name]));
    const dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: `${Stack.of(this).stackName}-agent-runs`,
      defaultInterval: Duration.hours(3),
    });
    dashboard.addWidgets(
      new TextWidget({
        markdown: `# Agent Runs\nRuntime metrics (namespace \`${METRICS_NAMESPACE}\`, dimension \`service\`) beside the queue, API and Lambda metrics. Alarms notify the alarm topic.`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      graph(
        'Steps and operations',
        runtime([METRIC.steps, METRIC.operations, METRIC.stepFailures], svc.step),
      ),
      graph(
        'Commit conflicts, refusals, malformed messages',
        runtime([METRIC.commitConflicts, METRIC.reducerRefusals, METRIC.malformedStepMessages], svc.step),
      ),
      graph(
        'Sweeper',
        runtime(
          [
            METRIC.takeovers,
            METRIC.woken,
            METRIC.expired,
            METRIC.finalized,
            METRIC.handedBack,
            METRIC.childrenStopped,
          ],
          svc.sweeper,
        ),
      ),
    );
    dashboard.addWidgets(
      graph('Step queue', [
        props.stepQueue.metricApproximateNumberOfMessagesVisible({ period }),
        props.stepQueue.metricApproximateNumberOfMessagesNotVisible({ period }),
        props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, label: 'DLQ visible' }),
      ]),
      graph('Oldest step message (s)', [props.stepQueue.metricApproximateAgeOfOldestMessage({ period })]),
      graph('HTTP API', [
        props.httpApi.metricCount({ period }),
        props.httpApi.metricClientError({ period }),
        props.httpApi.metricServerError({ period }),
      ]),
    );
    dashboard.addWidgets(
      graph(
        'Lambda errors',
        perFunction((fn) => fn.metricErrors({ period })),
      ),
      graph(
        'Lambda throttles',
        perFunction((fn) => fn.metricThrottles({ period })),
      ),
      graph(
        'Lambda duration p99 (ms)',
        perFunction((fn) => fn.metricDuration({ period, statistic: 'p99' })),
      ),
    );
    return dashboard;
  }

  private runtimeMetric(name: MetricName, service: string, period: Duration): Metric {
    return new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: { service },
      period,
      statistic: 'Sum',
    });
  }

  /** An alarm at or above `threshold` for `evaluationPeriods` (default 1); missing data is not breaching. */
  private alarm(
    id: string,
    options: { description: string; metric: IMetric; threshold: number; evaluationPeriods?: number },
  ): Alarm {
    return new Alarm(this, id, {
      alarmDescription: options.description,
      metric: options.metric,
      threshold: options.threshold,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: options.evaluationPeriods ?? 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
  }
}

function graph(title: string, metrics: IMetric[]): GraphWidget {
  return new GraphWidget({ title, left: metrics, width: 8, height: 6 });
}
