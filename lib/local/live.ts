/**
 * The local stack's live events and lifecycle notifications, wired like the AWS stack's: the
 * table's stream (DynamoDB Local's) read by a poller that plays the event source mapping for
 * the stream handler (functions/stream.ts's logic), the WebSocket API played by a `ws` server
 * for the live handler (functions/live.ts's logic), subscriptions kept in the table, and the
 * EventBridge notifications appended to a file a test or a person can read.
 * docs/guides/local-stack.md, "How it stands in for AWS".
 */
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { configFromEnv } from '../config.ts';
import { createSocketHandler } from '../handlers/live-socket.ts';
import type { LogSink } from '../handlers/observability.ts';
import { createStreamBatchHandler } from '../handlers/stream-batch.ts';
import { fileNotificationPublisher } from '../live/adapters.ts';
import { createDynamoSubscriptionStore } from '../live/dynamo-subscriptions.ts';
import { liveLimitsFromEnv } from '../live/limits.ts';
import type { TokenIdentity } from '../live/socket.ts';
import type { Runtime } from '../runtime.ts';
import type { LocalServices } from './services.ts';
import { withExpiryTimers } from './socket-expiry.ts';
import { type SocketServer, startSocketServer } from './socket-server.ts';
import { type StreamPoller, startStreamPoller } from './stream-poller.ts';

export interface LocalLiveOptions {
  runtime: Runtime;
  services: Pick<LocalServices, 'dynamoEndpoint' | 'region' | 'credentials'>;
  tableName: string;
  /** Who a WebSocket token stands for (as the HTTP API authenticates a bearer token) and its `exp`. */
  authenticate(token: string | null): Promise<TokenIdentity | null>;
  /** Where lifecycle notifications are appended, one JSON line each. */
  notificationsFile: string;
  /** WebSocket port on 127.0.0.1 (default: a free one). */
  port?: number;
  logger: LogSink;
  /**
   * Where the bounds and durations are read (default process.env): AGENT_RUNS_LIVE_MAX_* and
   * AGENT_RUNS_LIVE_SUBSCRIBES_PER_MINUTE (lib/live/limits.ts), AGENT_RUNS_LIVE_IDLE_MS and
   * AGENT_RUNS_LIVE_MAX_CONNECTION_MS (the socket server's). Throws ConfigError on a bad value.
   */
  env?: Readonly<Record<string, string | undefined>>;
}

export interface LocalLive {
  /** `ws://127.0.0.1:{port}`: the live event socket. */
  wsUrl: string;
  notificationsFile: string;
  sockets: SocketServer;
  streamPoller: StreamPoller;
  stop(): Promise<void>;
}

export async function startLocalLive(options: LocalLiveOptions): Promise<LocalLive> {
  const { runtime, logger } = options;
  const subscriptions = createDynamoSubscriptionStore(runtime.clients.doc, options.tableName);
  const env = options.env ?? process.env;
  const config = configFromEnv(env);
  const limits = liveLimitsFromEnv(env);
  const sockets = await startSocketServer({
    ...(options.port !== undefined ? { port: options.port } : {}),
    logger,
    idleMs: config.AGENT_RUNS_LIVE_IDLE_MS,
    maxConnectionMs: config.AGENT_RUNS_LIVE_MAX_CONNECTION_MS,
  });
  const now = () => Date.now();
  const fanOut = { store: runtime.store, subscriptions, poster: sockets.poster, now };
  const handler = createSocketHandler({
    ...fanOut,
    authenticate: options.authenticate,
    authorizeRead: async (runId, caller) => {
      await runtime.engine.getRun(runId, caller);
    },
    now,
    limits,
    logger,
  });
  sockets.setHandler(withExpiryTimers(handler, { ...fanOut, logger }));
  const streams = new DynamoDBStreamsClient({
    region: options.services.region,
    credentials: options.services.credentials,
    endpoint: options.services.dynamoEndpoint,
  });
  const publisher = fileNotificationPublisher(options.notificationsFile);
  let streamPoller: StreamPoller;
  try {
    streamPoller = await startStreamPoller({
      dynamo: runtime.clients.dynamo,
      streams,
      tableName: options.tableName,
      region: options.services.region,
      handler: createStreamBatchHandler({ ...fanOut, publisher, logger }),
      logger,
    });
  } catch (err) {
    await sockets.stop();
    streams.destroy();
    throw err;
  }
  return {
    wsUrl: sockets.url,
    notificationsFile: publisher.file,
    sockets,
    streamPoller,
    async stop() {
      await Promise.all([sockets.stop(), streamPoller.stop()]);
      streams.destroy();
    },
  };
}
