/**
 * The local stand-in for API Gateway's WebSocket API: a `ws` server on 127.0.0.1 that turns
 * each upgrade, text frame and close into the $connect, $default and $disconnect events the
 * live handler (functions/live.ts) receives in AWS, refuses the upgrade with 401 when $connect
 * answers it, handles one connection's frames in order, and plays the management API's
 * PostToConnection for the fan-out (a closed connection is `gone`, as GoneException says in
 * AWS) and its DeleteConnection (here with the close code and reason asked for, e.g. 4001
 * `token_expired`). docs/guides/local-stack.md, "How it stands in for AWS".
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import type { SocketEvent, SocketHandler } from '../handlers/live-socket.ts';
import { describeError, type LogSink, SILENT_LOG } from '../handlers/observability.ts';
import type { ConnectionPoster } from '../live/ports.ts';

export interface SocketServer {
  /** `ws://127.0.0.1:{port}` */
  url: string;
  port: number;
  /** PostToConnection for the connections of this server. */
  poster: ConnectionPoster;
  setHandler(handler: SocketHandler): void;
  /** Open connections (tests). */
  connections(): number;
  /** Cuts every open connection as a network failure would (close code 1006 at the client; tests). */
  dropConnections(): number;
  stop(): Promise<void>;
}

function statusOf(result: unknown): number {
  return typeof result === 'object' && result !== null && 'statusCode' in result
    ? Number((result as { statusCode?: number }).statusCode ?? 200)
    : 200;
}

/** Starts the server on `port` (0: a free one). Connections wait for a handler until one is set. */
export async function startSocketServer(
  options: { port?: number; logger?: LogSink } = {},
): Promise<SocketServer> {
  const logger = options.logger ?? SILENT_LOG;
  let handler: SocketHandler | null = null;
  const sockets = new Map<string, WebSocket>();
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' });
    res.end('this endpoint speaks WebSocket');
  });

  const event = (id: string, eventType: string, req?: IncomingMessage, body?: string): SocketEvent => {
    const url = new URL(req?.url ?? '/', 'http://local');
    return {
      requestContext: {
        connectionId: id,
        eventType,
        routeKey: eventType === 'MESSAGE' ? '$default' : `$${eventType.toLowerCase()}`,
      },
      queryStringParameters: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(
        Object.entries(req?.headers ?? {}).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]),
      ),
      ...(body !== undefined ? { body } : {}),
    };
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const id = randomUUID().replaceAll('-', '').slice(0, 16);
    const refuse = (status: number, text: string) => {
      socket.write(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      socket.destroy();
    };
    if (handler === null) return refuse(503, 'Service Unavailable');
    const h = handler;
    h(event(id, 'CONNECT', req)).then(
      (result) => {
        const status = statusOf(result);
        if (status !== 200) return refuse(status, status === 401 ? 'Unauthorized' : 'Refused');
        wss.handleUpgrade(req, socket, head, (ws) => {
          sockets.set(id, ws);
          let queue = Promise.resolve();
          ws.on('message', (data, isBinary) => {
            const body = isBinary ? Buffer.from(data as Buffer).toString('base64') : data.toString();
            queue = queue.then(() =>
              h({ ...event(id, 'MESSAGE', req, body), isBase64Encoded: isBinary }).then(
                () => undefined,
                (err: unknown) => logger.error('live handler threw', describeError(err)),
              ),
            );
          });
          ws.on('close', () => {
            sockets.delete(id);
            queue = queue.then(() =>
              h(event(id, 'DISCONNECT', req)).then(
                () => undefined,
                (err: unknown) => logger.error('live disconnect failed', describeError(err)),
              ),
            );
          });
        });
      },
      (err: unknown) => {
        logger.error('live connect failed', describeError(err));
        refuse(500, 'Internal Server Error');
      },
    );
  });

  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(options.port ?? 0, '127.0.0.1', () => done());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    port,
    poster: {
      async post(connectionId, message) {
        const ws = sockets.get(connectionId);
        if (ws === undefined || ws.readyState !== WebSocket.OPEN) return 'gone';
        return new Promise((resolve) =>
          ws.send(JSON.stringify(message), (err) => resolve(err ? 'gone' : 'sent')),
        );
      },
      async close(connectionId, code, reason) {
        const ws = sockets.get(connectionId);
        if (ws === undefined || ws.readyState !== WebSocket.OPEN) return;
        ws.close(code, reason);
      },
    },
    setHandler(next) {
      handler = next;
    },
    connections: () => sockets.size,
    dropConnections() {
      const n = sockets.size;
      for (const ws of sockets.values()) ws.terminate();
      return n;
    },
    async stop() {
      for (const ws of sockets.values()) ws.terminate();
      wss.close();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
