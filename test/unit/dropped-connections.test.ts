/**
 * Dropped connections cannot flood the log: over TCP, the local gateway logs clients that go
 * away mid-body at warn, at most one line per interval with the count left out; the HTTP app
 * does the same for a request that fails after its client went away, while a real internal
 * error still logs at error.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { rateLimitedLog } from '../../lib/core/rate-limited-log.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import type { LogSink } from '../../lib/handlers/observability.ts';
import { bearerTokenAuth, createHttpApp } from '../../lib/http/index.ts';
import { CLIENT_GONE_MESSAGE } from '../../lib/http/middleware.ts';
import { DROPPED_MESSAGE, startGateway } from '../../lib/local/gateway.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';

interface Line {
  level: string;
  message: string;
  attributes: Record<string, unknown>;
}

function capture(): { logger: LogSink; lines: Line[] } {
  const lines: Line[] = [];
  const at =
    (level: string) =>
    (message: string, ...attributes: Record<string, unknown>[]) =>
      lines.push({ level, message, attributes: Object.assign({}, ...attributes) });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

/** Sends the headers of a 1000-byte JSON body and a few bytes of it, then drops the connection. */
function dropMidBody(port: number): Promise<void> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        'POST /runs HTTP/1.1\r\nHost: local\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"subject":',
        () => {
          socket.destroy();
          done();
        },
      );
    });
    socket.on('error', fail);
  });
}

describe('connections dropped mid-body', () => {
  it('log at most one warn line per interval on the gateway, with the count of the rest, and no error', async () => {
    const { logger, lines } = capture();
    let handled = 0;
    const gateway = await startGateway({
      handler: async () => {
        handled += 1;
        return { statusCode: 200, body: '{}' };
      },
      port: 0,
      logger,
      dropLogIntervalMs: 60_000,
    });
    try {
      for (let i = 0; i < 50; i += 1) await dropMidBody(gateway.port);
      // Let the server see every close.
      await new Promise((r) => setTimeout(r, 200));
      expect(lines.filter((l) => l.level === 'error')).toEqual([]);
      expect(lines).toEqual([
        { level: 'warn', message: DROPPED_MESSAGE, attributes: expect.objectContaining({ suppressed: 0 }) },
      ]);
      expect(handled).toBe(0);
      // The gateway still answers whole requests.
      const ok = await fetch(`${gateway.url}/health`);
      expect(ok.status).toBe(200);
    } finally {
      await gateway.stop();
    }
    // Stopping writes the count of the lines left out.
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({
      level: 'warn',
      message: DROPPED_MESSAGE,
      attributes: { suppressed: 49 },
    });
  });

  it('writes one line per elapsed interval on the gateway clock', async () => {
    const { logger, lines } = capture();
    let t = 0;
    const gateway = await startGateway({
      handler: async () => ({ statusCode: 200, body: '{}' }),
      port: 0,
      logger,
      dropLogIntervalMs: 1_000,
      now: () => t,
    });
    try {
      for (let i = 0; i < 50; i += 1) {
        await dropMidBody(gateway.port);
        await new Promise((r) => setTimeout(r, 5));
        t += 100; // 50 drops over 5 s of gateway time
      }
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      await gateway.stop();
    }
    expect(lines.every((l) => l.level === 'warn')).toBe(true);
    // One line per second of gateway time (5 s), and the count they stand for adds up to 50.
    expect(lines.length).toBeGreaterThanOrEqual(5);
    expect(lines.length).toBeLessThanOrEqual(7);
    const represented = lines.reduce((n, l) => n + 1 + Number(l.attributes.suppressed), 0);
    expect(represented).toBe(50 + 1); // the flush line at stop stands only for its suppressed ones
  });
});

describe('requests whose client went away, in the HTTP app', () => {
  const TOKEN = 'drop-token';
  const failingBody = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"subject":'));
        controller.error(new Error('the client went away'));
      },
    });
  const post = (app: ReturnType<typeof createHttpApp>, signal?: AbortSignal): Promise<Response> =>
    Promise.resolve(
      app.request('/runs', {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: failingBody(),
        duplex: 'half',
        ...(signal !== undefined ? { signal } : {}),
      } as RequestInit),
    );

  it('logs 50 aborted requests as at most one warn line, and a real internal error at error', async () => {
    const entries: Record<string, unknown>[] = [];
    // The body fails before any route runs: no engine call is reached.
    const app = createHttpApp({
      engine: {} as Engine,
      functions: new InMemoryFunctionRegistry([]),
      tools: { list: async () => [] },
      auth: bearerTokenAuth(TOKEN, { kind: 'user', id: 'alice' }),
      log: (e) => entries.push(e),
      dropLogIntervalMs: 60_000,
    });
    for (let i = 0; i < 50; i += 1) {
      const aborted = new AbortController();
      aborted.abort();
      const answer = await post(app, aborted.signal);
      expect(answer.status).toBe(500);
    }
    expect(entries).toEqual([
      expect.objectContaining({ level: 'warn', message: CLIENT_GONE_MESSAGE, path: '/runs', suppressed: 0 }),
    ]);

    // The same failure with the client still there is an internal error, logged as one.
    const response = await post(app);
    expect(response.status).toBe(500);
    expect(entries.filter((e) => e.level === 'error')).toHaveLength(1);
  });
});

describe('rateLimitedLog', () => {
  it('writes the first event, counts the rest of the interval, and reports them with the next line', () => {
    const written: Record<string, unknown>[] = [];
    let t = 0;
    const log = rateLimitedLog((_m, a) => written.push(a), 'm', { intervalMs: 100, now: () => t });
    for (let i = 0; i < 10; i += 1) log.note({ i });
    t = 100;
    log.note({ i: 10 });
    log.note({ i: 11 });
    log.flush();
    log.flush();
    expect(written).toEqual([{ i: 0, suppressed: 0 }, { i: 10, suppressed: 9 }, { suppressed: 1 }]);
    expect(log.counts).toEqual({ noted: 12, written: 3 });
  });
});
