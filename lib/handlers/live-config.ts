/**
 * The live functions' configuration from the environment the CDK stack sets (cdk/live.ts):
 * LIVE_CALLBACK_URL (the WebSocket API stage's management endpoint, `https://…/{stage}`),
 * EVENT_BUS_NAME (the lifecycle notifications' bus), JWT_ISSUER and JWT_AUDIENCES (comma
 * separated: who may connect), read through lib/config.ts, and the two handlers wired from it
 * for functions/live.ts and functions/stream.ts. Throws ConfigError naming the variable when one
 * is missing or bad.
 */
import { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { ConfigError, configFromEnv, ENV, required } from '../config.ts';
import { apiGatewayPoster, eventBridgePublisher } from '../live/adapters.ts';
import { createDynamoSubscriptionStore } from '../live/dynamo-subscriptions.ts';
import { jwtTokenAuth } from '../live/jwt-auth.ts';
import { liveLimitsFromEnv } from '../live/limits.ts';
import type { Container } from './container.ts';
import { createSocketHandler, type SocketHandler } from './live-socket.ts';
import { createStreamBatchHandler, type StreamBatchHandler } from './stream-batch.ts';
export interface LiveConfig {
  callbackUrl: string;
  eventBusName: string;
  jwtIssuer: string;
  jwtAudiences: string[];
}

/** The live configuration, each variable checked only where `needs` asks for it. */
export function liveConfigFromEnv(
  env: NodeJS.ProcessEnv,
  needs: { auth?: boolean; bus?: boolean } = {},
): Partial<LiveConfig> & { callbackUrl: string } {
  const config = configFromEnv(env);
  const out: Partial<LiveConfig> & { callbackUrl: string } = {
    callbackUrl: required(config, ENV.LIVE_CALLBACK_URL),
  };
  if (needs.bus === true) out.eventBusName = required(config, ENV.EVENT_BUS_NAME);
  if (needs.auth === true) {
    out.jwtIssuer = required(config, ENV.JWT_ISSUER);
    const audiences = required(config, ENV.JWT_AUDIENCES)
      .split(',')
      .map((a) => a.trim())
      .filter((a) => a.length > 0);
    if (audiences.length === 0) throw new ConfigError(ENV.JWT_AUDIENCES, 'JWT_AUDIENCES names no audience');
    out.jwtAudiences = audiences;
  }
  return out;
}

/** What both live functions share: the subscriptions in the table, posts through the stage. */
function fanOutOf(container: Container, env: NodeJS.ProcessEnv, callbackUrl: string) {
  const { runtime, tracer } = container;
  const management = tracer.captureAWSv3Client(new ApiGatewayManagementApiClient({ endpoint: callbackUrl }));
  return {
    store: runtime.store,
    subscriptions: createDynamoSubscriptionStore(
      runtime.clients.doc,
      required(configFromEnv(env), ENV.TABLE_NAME),
    ),
    poster: apiGatewayPoster(management),
  };
}

/** The WebSocket API's handler (functions/live.ts). Throws ConfigError. */
export function liveSocketFromEnv(container: Container, env: NodeJS.ProcessEnv): SocketHandler {
  const config = liveConfigFromEnv(env, { auth: true });
  const { runtime, logger } = container;
  return createSocketHandler({
    ...fanOutOf(container, env, config.callbackUrl),
    authenticate: jwtTokenAuth({ issuer: config.jwtIssuer ?? '', audiences: config.jwtAudiences ?? [] }),
    authorizeRead: async (runId, caller) => {
      await runtime.engine.getRun(runId, caller);
    },
    now: () => Date.now(),
    limits: liveLimitsFromEnv(env),
    logger,
  });
}

/** The table stream's handler (functions/stream.ts). Throws ConfigError. */
export function streamBatchFromEnv(container: Container, env: NodeJS.ProcessEnv): StreamBatchHandler {
  const config = liveConfigFromEnv(env, { bus: true });
  const events = container.tracer.captureAWSv3Client(new EventBridgeClient({}));
  return createStreamBatchHandler({
    ...fanOutOf(container, env, config.callbackUrl),
    publisher: eventBridgePublisher(events, config.eventBusName ?? ''),
    logger: container.logger,
  });
}
