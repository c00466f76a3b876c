/**
 * The local stand-in for API Gateway (HTTP API, payload format 2.0): a Node HTTP server on
 * 127.0.0.1 that turns each request into an APIGatewayProxyEventV2, invokes the control
 * handler (functions/control.ts) and writes its APIGatewayProxyResultV2 back. It does no
 * routing and no authentication: the Authorization header is passed through and the HTTP app
 * decides (GET /health and GET /openapi.json need no token: that is the app's rule).
 * docs/guides/local-stack.md, "How it stands in for AWS".
 *
 * Like API Gateway: bodies above `maxBodyBytes` (default 6 MB, Lambda's payload limit) are
 * answered 413 `payload_too_large` without invoking the handler; a handler that throws is
 * answered 500 `internal` (as the HTTP API answers unexpected errors); a text
 * body (JSON, text/*, form data) is passed as a string, any other body base64-encoded.
 * Gateway-made errors use the API's error shape `{code, message, details}`. A client that drops
 * its connection mid-body is not an error: one warn line per `dropLogIntervalMs` at most.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyResultV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import { overLimitMessage } from '../contracts/limits.ts';
import { rateLimitedLog } from '../core/rate-limited-log.ts';
import { describeError, type LogSink, SILENT_LOG } from '../handlers/observability.ts';
import { lambdaContext } from './poller.ts';

/**
 * A handler shaped like functions/control.ts's, with one local addition: `signal` aborts when
 * the client went away before its answer was written (API Gateway never tells a function
 * that), so that a long poll stops polling the store at once instead of at the end of its wait.
 */
export type ApiHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
  signal?: AbortSignal,
) => Promise<APIGatewayProxyResultV2>;

/** Lambda's synchronous invocation payload limit (bytes). */
export const MAX_BODY_BYTES = 6 * 1024 * 1024;

export interface GatewayOptions {
  /**
   * The handler to invoke; until {@link Gateway.setHandler} sets one (null), requests are
   * answered 503 `store_unavailable` with Retry-After: 1 (the services are still starting).
   */
  handler: ApiHandler | null;
  /** TCP port on 127.0.0.1; 0 picks a free one. */
  port: number;
  host?: string;
  maxBodyBytes?: number;
  /** The invocation time limit reported by the context (default 30 000 ms, API Gateway's limit). */
  timeoutMs?: number;
  logger?: LogSink;
  /**
   * A client that goes away before its body is read (a dropped connection) is no error: it is
   * logged at warn, at most one line per this many ms, each with the count of those left out
   * (default 10 000).
   */
  dropLogIntervalMs?: number;
  /** The clock of the drop log's rate limit (ms; default Date.now). */
  now?: () => number;
}

export interface Gateway {
  /** `http://127.0.0.1:{port}` */
  url: string;
  port: number;
  setHandler(handler: ApiHandler): void;
  /**
   * Stops accepting, closes idle keep-alive connections, waits for requests in flight up to
   * `graceMs` (default 2 000) and then cuts the rest. Idempotent.
   */
  stop(graceMs?: number): Promise<void>;
}

/** Stable codes of {@link GatewayError}. */
export type GatewayErrorCode = 'port_in_use' | 'listen_failed';

export class GatewayError extends Error {
  override name = 'GatewayError';
  readonly code: GatewayErrorCode;
  readonly port: number;
  constructor(code: GatewayErrorCode, port: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.port = port;
  }
}

/**
 * Listens on host:port and serves. Throws GatewayError `port_in_use` when the port is taken
 * (EADDRINUSE) and `listen_failed` for any other listen error (e.g. EACCES).
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const host = options.host ?? '127.0.0.1';
  const maxBody = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const logger = options.logger ?? SILENT_LOG;
  let handler = options.handler;
  const drops = rateLimitedLog((message, attributes) => logger.warn(message, attributes), DROPPED_MESSAGE, {
    ...(options.dropLogIntervalMs !== undefined ? { intervalMs: options.dropLogIntervalMs } : {}),
    now: options.now ?? (() => Date.now()),
  });

  const server: Server = createServer((req, res) => {
    serve(req, res).catch((err: unknown) => {
      if (droppedByClient(req, err)) {
        // Nobody is left to answer; a client can do this at will, so it must not flood the log.
        drops.note(describeError(err));
        res.destroy();
        return;
      }
      logger.error('gateway failed to answer a request', describeError(err));
      if (!res.headersSent) sendJson(res, 500, 'internal', 'Internal Server Error');
      else res.destroy();
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, maxBody);
    if (body === null) {
      // Worded as the HTTP app words its own body limit (lib/http/middleware.ts): one message.
      const declared = Number(req.headers['content-length']);
      const bytes = Number.isSafeInteger(declared) && declared > maxBody ? declared : undefined;
      sendJson(res, 413, 'payload_too_large', overLimitMessage('the body', maxBody, bytes), {
        limit_bytes: maxBody,
        ...(bytes !== undefined ? { bytes } : {}),
      });
      return;
    }
    if (handler === null) {
      sendJson(
        res,
        503,
        'store_unavailable',
        'the local stack is starting; retry shortly',
        {},
        {
          'retry-after': '1',
        },
      );
      return;
    }
    const event = toApiGatewayEvent(req, body);
    // The client going away (its socket closed before the answer was written) aborts the request.
    const gone = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) gone.abort();
    };
    res.once('close', onClose);
    let result: APIGatewayProxyResultV2;
    try {
      result = await handler(event, lambdaContext('agent-runs-control', timeoutMs), gone.signal);
    } catch (err) {
      logger.error('control handler threw', { path: event.rawPath, ...describeError(err) });
      sendJson(res, 500, 'internal', 'Internal Server Error');
      return;
    }
    writeResult(res, result);
  }

  await new Promise<void>((done, fail) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      fail(
        err.code === 'EADDRINUSE'
          ? new GatewayError(
              'port_in_use',
              options.port,
              `port ${options.port} is already in use on ${host}: stop what uses it, or choose another with --port or PORT`,
              { cause: err },
            )
          : new GatewayError(
              'listen_failed',
              options.port,
              `cannot listen on ${host}:${options.port}: ${err.message}`,
              {
                cause: err,
              },
            ),
      );
    });
    server.listen(options.port, host, () => done());
  });
  const port = (server.address() as AddressInfo).port;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    setHandler(next) {
      handler = next;
    },
    stop(graceMs = 2_000) {
      stopping ??= new Promise<void>((done) => {
        server.close(() => {
          drops.flush();
          done();
        });
        server.closeIdleConnections();
        // Long polls (GET /runs/{id}/events?wait=20) would hold the close: cut them after the grace.
        setTimeout(() => server.closeAllConnections(), graceMs).unref();
      });
      return stopping;
    },
  };
}

/** The warn line of connections dropped before their body was read (rate-limited). */
export const DROPPED_MESSAGE = 'client dropped the connection before its body was read';

/**
 * Whether `err` is the client going away mid-body (the request incomplete and its stream
 * aborted: ECONNRESET "aborted", a premature close) rather than a fault of the gateway.
 */
function droppedByClient(req: IncomingMessage, err: unknown): boolean {
  if (req.complete) return false; // the whole request arrived: whatever failed is ours
  const code = (err as { code?: unknown } | null)?.code;
  return (
    code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || req.readableAborted || req.destroyed
  );
}

/** Reads the whole body; null once it exceeds `limit` bytes (the rest is drained, not kept). */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const declared = Number(req.headers['content-length'] ?? '0');
  let tooLarge = declared > limit;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    if (tooLarge) continue;
    size += (chunk as Buffer).length;
    if (size > limit) tooLarge = true;
    else chunks.push(chunk as Buffer);
  }
  return tooLarge ? null : Buffer.concat(chunks);
}

/** Content types passed to the handler as text; everything else is base64 (API Gateway does the same for binary). */
function isText(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType === '') return true;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return (
    type.startsWith('text/') ||
    type === 'application/json' ||
    type.endsWith('+json') ||
    type === 'application/x-www-form-urlencoded' ||
    type === 'application/xml'
  );
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Whether `bytes` are well-formed UTF-8. */
function isUtf8(bytes: Buffer): boolean {
  try {
    STRICT_UTF8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * Builds the payload format 2.0 event API Gateway sends for `$default` routes: lower-case
 * headers (repeated values joined by commas), cookies apart, `x-forwarded-proto: http` (API
 * Gateway sets the scheme the client used), query parameters decoded (repeated ones joined by
 * commas), the raw path and query string as sent.
 */
export function toApiGatewayEvent(req: IncomingMessage, body: Buffer): APIGatewayProxyEventV2 {
  const target = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  let cookies: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = (req.rawHeaders[i] ?? '').toLowerCase();
    const value = req.rawHeaders[i + 1] ?? '';
    if (name === 'cookie') {
      cookies = cookies.concat(value.split(';').map((c) => c.trim()));
      continue;
    }
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  // API Gateway tells the function the scheme the client used (https there, plain http here).
  headers['x-forwarded-proto'] = 'http';
  const query: Record<string, string> = {};
  for (const [k, v] of target.searchParams) query[k] = query[k] === undefined ? v : `${query[k]},${v}`;
  const method = (req.method ?? 'GET').toUpperCase();
  const now = new Date();
  // A text body that is not valid UTF-8 goes base64-encoded, its bytes as sent, so that the API
  // refuses it (400 invalid_unicode) instead of reading U+FFFD in place of the bad bytes.
  const text = isText(headers['content-type']) && isUtf8(body);
  const rawQuery = (req.url ?? '').includes('?')
    ? (req.url ?? '').slice((req.url ?? '').indexOf('?') + 1)
    : '';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: target.pathname,
    rawQueryString: rawQuery,
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? '127.0.0.1',
      domainPrefix: (headers.host ?? '127').split('.')[0] ?? 'local',
      http: {
        method,
        path: target.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length > 0 ? { body: text ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: body.length > 0 && !text,
  };
}

/**
 * Writes a handler result the way API Gateway does: a structured result (with statusCode) as
 * given; anything else (a string or an object without statusCode) as a 200 JSON body.
 */
export function writeResult(res: ServerResponse, result: APIGatewayProxyResultV2): void {
  const structured: APIGatewayProxyStructuredResultV2 =
    typeof result === 'object' && result !== null && 'statusCode' in result
      ? (result as APIGatewayProxyStructuredResultV2)
      : {
          statusCode: 200,
          headers: { 'content-type': 'application/json' },
          body: typeof result === 'string' ? result : JSON.stringify(result),
        };
  const status = structured.statusCode ?? 200;
  for (const [name, value] of Object.entries(structured.headers ?? {})) res.setHeader(name, String(value));
  if (structured.cookies !== undefined && structured.cookies.length > 0)
    res.setHeader('set-cookie', structured.cookies);
  const body =
    structured.body === undefined
      ? Buffer.alloc(0)
      : structured.isBase64Encoded
        ? Buffer.from(structured.body, 'base64')
        : Buffer.from(structured.body, 'utf8');
  if (!res.hasHeader('content-type') && body.length > 0) res.setHeader('content-type', 'application/json');
  res.setHeader('content-length', body.length);
  res.writeHead(status);
  res.end(body);
}

function sendJson(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  details: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ code, message, details });
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
