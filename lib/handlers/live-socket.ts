/**
 * The logic behind `functions/live.ts`: API Gateway WebSocket events ($connect, $disconnect,
 * $default) → lib/live/socket.ts. $connect answers 401 for bad credentials and 429 for a
 * principal at its bound of open sockets (API Gateway then refuses the upgrade); every other route answers 200
 * and replies through the connection.
 * docs/contracts/run-lifecycle.md, "over HTTP, WebSocket".
 */
import type { APIGatewayProxyResultV2 } from 'aws-lambda';
import { createConnectGate } from '../live/connect-gate.ts';
import { connect, connectToken, disconnect, receive, type SocketDeps } from '../live/socket.ts';
import { describeError, type LogSink } from './observability.ts';

/** The parts of an API Gateway WebSocket event this handler reads. */
export interface SocketEvent {
  requestContext: { routeKey?: string; eventType?: string; connectionId?: string };
  queryStringParameters?: Record<string, string | undefined> | null;
  headers?: Record<string, string | undefined> | null;
  body?: string | null;
  isBase64Encoded?: boolean;
}

export type SocketHandler = (event: SocketEvent) => Promise<APIGatewayProxyResultV2>;

/** The handler, with a connect gate of its own unless `deps.gate` is given (lib/live/connect-gate.ts). */
export function createSocketHandler(deps: SocketDeps & { logger: LogSink }): SocketHandler {
  const gated = { ...deps, gate: deps.gate ?? createConnectGate() };
  return async (event) => {
    const id = event.requestContext.connectionId;
    if (id === undefined) return { statusCode: 400, body: 'no connection id' };
    const type = event.requestContext.eventType ?? event.requestContext.routeKey;
    try {
      if (type === 'CONNECT' || type === '$connect') {
        const token = connectToken(event.queryStringParameters ?? undefined, event.headers ?? undefined);
        const outcome = await connect(gated, id, token);
        if (outcome === 'connected') return { statusCode: 200 };
        return outcome === 'unauthenticated'
          ? { statusCode: 401, body: 'unauthenticated' }
          : { statusCode: 429, body: 'too_many_connections' };
      }
      if (type === 'DISCONNECT' || type === '$disconnect') {
        await disconnect(deps, id);
        return { statusCode: 200 };
      }
      const body = event.body ?? '';
      await receive(
        deps,
        id,
        event.isBase64Encoded === true ? Buffer.from(body, 'base64').toString('utf8') : body,
      );
      return { statusCode: 200 };
    } catch (err) {
      deps.logger.error('live socket event failed', {
        connection_id: id,
        route: type,
        ...describeError(err),
      });
      return { statusCode: 500, body: 'internal error' };
    }
  };
}
