/**
 * The live fan-out's adapters outside the table: API Gateway's management API (PostToConnection
 * on a WebSocket API connection, a GoneException means the client left; DeleteConnection to
 * close one, with a close code API Gateway chooses; GetConnection to learn whether one is still open), EventBridge
 * (PutEvents, ten entries per call, a failed entry fails the batch so that the stream record is
 * retried), and the local stack's notification file (one JSON line per notification, appended).
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  type ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GetConnectionCommand,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { NOTIFICATION_DETAIL_TYPE, NOTIFICATION_SOURCE, type RunNotification } from '../contracts/index.ts';
import type { ConnectionPoster, NotificationPublisher } from './ports.ts';

/** Posts through API Gateway's management API of one WebSocket stage. */
export function apiGatewayPoster(client: ApiGatewayManagementApiClient): ConnectionPoster {
  return {
    async post(connectionId, message) {
      try {
        await client.send(
          new PostToConnectionCommand({ ConnectionId: connectionId, Data: JSON.stringify(message) }),
        );
        return 'sent';
      } catch (err) {
        if ((err as { name?: string }).name === 'GoneException') return 'gone';
        throw err;
      }
    },
    /** DeleteConnection: API Gateway cannot be told a close code, so `code` and `reason` are not sent. */
    async close(connectionId, _code, _reason) {
      try {
        await client.send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
      } catch (err) {
        if ((err as { name?: string }).name === 'GoneException') return;
        throw err;
      }
    },
    async alive(connectionId) {
      try {
        await client.send(new GetConnectionCommand({ ConnectionId: connectionId }));
        return true;
      } catch (err) {
        if ((err as { name?: string }).name === 'GoneException') return false;
        throw err;
      }
    },
  };
}

/** EventBridge PutEvents allows ten entries per request. */
const PUT_EVENTS_BATCH = 10;

/** Publishes to an event bus (`source` agent-runs, `detail-type` Agent Run Status Changed). */
export function eventBridgePublisher(client: EventBridgeClient, busName: string): NotificationPublisher {
  return {
    async publish(notifications) {
      for (let i = 0; i < notifications.length; i += PUT_EVENTS_BATCH) {
        const batch = notifications.slice(i, i + PUT_EVENTS_BATCH);
        const out = await client.send(
          new PutEventsCommand({
            Entries: batch.map((n) => ({
              EventBusName: busName,
              Source: NOTIFICATION_SOURCE,
              DetailType: NOTIFICATION_DETAIL_TYPE,
              Detail: JSON.stringify(n),
              Time: new Date(n.at),
            })),
          }),
        );
        if ((out.FailedEntryCount ?? 0) > 0) {
          const first = out.Entries?.find((e) => e.ErrorCode !== undefined);
          throw new Error(
            `EventBridge refused ${out.FailedEntryCount} notifications: ${first?.ErrorCode ?? ''} ${first?.ErrorMessage ?? ''}`,
          );
        }
      }
    },
  };
}

/** The local stack's stand-in: appends `{source, detail-type, detail}` lines to `file`. */
export function fileNotificationPublisher(file: string): NotificationPublisher & { file: string } {
  mkdirSync(dirname(file), { recursive: true });
  return {
    file,
    async publish(notifications: RunNotification[]) {
      if (notifications.length === 0) return;
      const lines = notifications.map((n) =>
        JSON.stringify({ source: NOTIFICATION_SOURCE, 'detail-type': NOTIFICATION_DETAIL_TYPE, detail: n }),
      );
      appendFileSync(file, `${lines.join('\n')}\n`);
    },
  };
}
