/**
 * The local stand-in for API Gateway's WebSocket API: a `ws` server on 127.0.0.1 that turns
 * each upgrade, text frame and close into the $connect, $default and $disconnect events the
 * live handler (functions/live.ts) receives in AWS, refuses the upgrade with 401 when $connect
 * answers it, handles one connection's frames in order, and plays the management API's
 * PostToConnection for the fan-out (a closed connection is `gone`, as GoneException says in
 * AWS), its DeleteConnection (here with the close code and reason asked for, e.g. 4001
 * `token_expired`) and GetConnection (`alive`). As API Gateway does, it closes a connection
 * that received no client frame for `idleMs` (10 min there) and any connection after
 * `maxConnectionMs` (2 h there), with code 1001 and reason `idle_timeout` or
 * `max_connection_duration` (API Gateway's own reason text may differ: a client must treat any
 * close as "reconnect and subscribe from the last seq held"), and a client frame over API
 * Gateway's 128 KB with 1009. Refused upgrades answer the $connect status (401, 429).
 * docs/guides/local-stack.md, "How it stands in for AWS".
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { type RateLimitedLog, rateLimitedLog } from '../core/rate-limited-log.ts';
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
  /**
   * Cuts every open connection as a network failure would (close code 1006 at the client; tests).
   * `deliverDisconnect: false` plays a $disconnect API Gateway never delivers (it promises it at
   * best effort): the live handler is not told.
   */
  dropConnections(options?: { deliverDisconnect?: boolean }): number;
  stop(): Promise<void>;
}

function statusOf(result: unknown): number {
  return typeof result === 'object' && result !== null && 'statusCode' in result
    ? Number((result as { statusCode?: number }).statusCode ?? 200)
    : 200;
}

/** The close code of a connection the server ends for idleness or age (API Gateway's "going away"). */
export const GOING_AWAY_CLOSE = 1001;

/**
 * The largest client frame the server reads (bytes): API Gateway's WebSocket message quota
 * (128 KB). A larger frame closes its connection with 1009 (message too big), so a client that
 * works here does not send what AWS would refuse, and one connection cannot make the local
 * stack buffer `ws`'s default 100 MiB.
 */
export const API_GATEWAY_MAX_MESSAGE_BYTES = 128 * 1024;

const REFUSED_TEXT: Record<number, string> = {
  401: 'Unauthorized',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export interface SocketServerOptions {
  /** Port on 127.0.0.1 (default 0: a free one). */
  port?: number;
  logger?: LogSink;
  /** Closes a connection that received no client frame for this long (ms; default 600 000, API Gateway's). */
  idleMs?: number;
  /** Closes every connection this long after it opened (ms; default 7 200 000, API Gateway's). */
  maxConnectionMs?: number;
}

/** The API Gateway WebSocket event of one moment of connection `id`. */
function event(id: string, eventType: string, req?: IncomingMessage, body?: string): SocketEvent {
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
}

/**
 * Plays API Gateway for one open connection: its frames to the handler in order ($default), its
 * close to $disconnect unless `closed()` says it is not to be delivered, the idle and maximum
 * duration timers (close 1001).
 */
function attach(
  ws: WebSocket,
  c: {
    id: string;
    req: IncomingMessage;
    handler: SocketHandler;
    idleMs: number;
    maxConnectionMs: number;
    logger: LogSink;
    /** Protocol errors of connections, logged at most once per interval (a client causes them at will). */
    frameErrors: RateLimitedLog;
  },
  closed: () => boolean,
): void {
  const { id, req, logger } = c;
  const h = c.handler;
  const ended = (reason: string) => () => ws.close(GOING_AWAY_CLOSE, reason);
  const maxTimer = setTimeout(ended('max_connection_duration'), c.maxConnectionMs);
  let idleTimer = setTimeout(ended('idle_timeout'), c.idleMs);
  const active = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(ended('idle_timeout'), c.idleMs);
  };
  ws.on('ping', active);
  ws.on('pong', active);
  // A frame the protocol refuses (invalid UTF-8, a bad opcode, too large): ws closes this
  // connection (1007 / 1002 / 1009) and emits the error; without a listener it would end the
  // process, and with it every other user's connections.
  ws.on('error', (err) => c.frameErrors.note({ connection_id: id, error: describeError(err) }));
  let queue = Promise.resolve();
  ws.on('message', (data, isBinary) => {
    active();
    const body = isBinary ? Buffer.from(data as Buffer).toString('base64') : data.toString();
    queue = queue.then(() =>
      h({ ...event(id, 'MESSAGE', req, body), isBase64Encoded: isBinary }).then(
        () => undefined,
        (err: unknown) => logger.error('live handler threw', describeError(err)),
      ),
    );
  });
  ws.on('close', () => {
    clearTimeout(maxTimer);
    clearTimeout(idleTimer);
    if (!closed()) return;
    queue = queue.then(() =>
      h(event(id, 'DISCONNECT', req)).then(
        () => undefined,
        (err: unknown) => logger.error('live disconnect failed', describeError(err)),
      ),
    );
  });
}

/** Starts the server. Connections wait for a handler until one is set. */
export async function startSocketServer(options: SocketServerOptions = {}): Promise<SocketServer> {
  const logger = options.logger ?? SILENT_LOG;
  const idleMs = options.idleMs ?? 600_000;
  const maxConnectionMs = options.maxConnectionMs ?? 7_200_000;
  /** Connections whose $disconnect is not delivered (dropConnections). */
  const undelivered = new Set<string>();
  let handler: SocketHandler | null = null;
  const sockets = new Map<string, WebSocket>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: API_GATEWAY_MAX_MESSAGE_BYTES });
  const server = createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' });
    res.end('this endpoint speaks WebSocket');
  });

  const frameErrors = rateLimitedLog(
    (message, attributes) => logger.warn(message, attributes),
    'live socket connection refused by the protocol (closed)',
    { now: Date.now },
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A client that resets its connection during the upgrade: nothing to do but forget it.
    socket.on('error', (err) => frameErrors.note({ error: describeError(err) }));
    const id = randomUUID().replaceAll('-', '').slice(0, 16);
    const refuse = (status: number) => {
      const text = REFUSED_TEXT[status] ?? 'Refused';
      socket.write(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      socket.destroy();
    };
    if (handler === null) return refuse(503);
    const h = handler;
    h(event(id, 'CONNECT', req)).then(
      (result) => {
        const status = statusOf(result);
        if (status !== 200) return refuse(status);
        wss.handleUpgrade(req, socket, head, (ws) => {
          sockets.set(id, ws);
          attach(ws, { id, req, handler: h, idleMs, maxConnectionMs, logger, frameErrors }, () => {
            sockets.delete(id);
            return !undelivered.delete(id);
          });
        });
      },
      (err: unknown) => {
        logger.error('live connect failed', describeError(err));
        refuse(500);
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
      async alive(connectionId) {
        return sockets.get(connectionId)?.readyState === WebSocket.OPEN;
      },
    },
    setHandler(next) {
      handler = next;
    },
    connections: () => sockets.size,
    dropConnections(drop = {}) {
      const n = sockets.size;
      for (const [id, ws] of sockets) {
        if (drop.deliverDisconnect === false) undelivered.add(id);
        ws.terminate();
      }
      return n;
    },
    async stop() {
      for (const ws of sockets.values()) ws.terminate();
      wss.close();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
