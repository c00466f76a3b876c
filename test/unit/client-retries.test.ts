/**
 * The client's retries against a real HTTP server (node:http on 127.0.0.1): an answer 503 or
 * 429 is sent again after the Retry-After it carried (a backoff without one), at most
 * `retry.attempts` tries, a Retry-After above `retry.maxWaitMs` thrown at once; other answers
 * are never retried. ApiError's code is the catalogue's, or `http_<status>` for one it does not
 * know. The waits are recorded by an injected sleep, not measured.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ApiError, createClient } from '../../lib/client/index.ts';

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** What the server answers, in order (the last one repeats), and what it received. */
let script: Answer[] = [];
let received: { method: string; url: string; body: string }[] = [];
let server: Server;
let baseUrl: string;

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    received.push({ method: req.method ?? '', url: req.url ?? '', body: await bodyOf(req) });
    const answer = script[Math.min(received.length, script.length) - 1] ?? { status: 500, body: {} };
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  baseUrl = `http://127.0.0.1:${address.port}`;
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));
beforeEach(() => {
  script = [];
  received = [];
});

const HEALTHY = { status: 200, body: { status: 'ok' } };
const unavailable = (retryAfter?: string): Answer => ({
  status: 503,
  body: { code: 'store_unavailable', message: 'retry', details: {} },
  ...(retryAfter !== undefined ? { headers: { 'retry-after': retryAfter } } : {}),
});
const tooManyWaits = (retryAfter: string): Answer => ({
  status: 429,
  body: { code: 'too_many_waits', message: 'wait', details: {} },
  headers: { 'retry-after': retryAfter },
});

/** A client on the server whose waits are recorded (ms) instead of slept. */
function recordingClient(retry: { attempts?: number; maxWaitMs?: number; backoffMs?: number } = {}) {
  const waits: number[] = [];
  const client = createClient({
    baseUrl,
    token: 't',
    retry: { ...retry, sleep: async (ms) => void waits.push(ms) },
  });
  return { client, waits };
}

describe('the client retries answers 503 and 429 as Retry-After says', () => {
  it('sends the call again after each Retry-After (503, then 429) and resolves with the answer', async () => {
    script = [unavailable('2'), tooManyWaits('1'), HEALTHY];
    const { client, waits } = recordingClient();

    const health = await client.health();

    expect(health).toEqual({ status: 'ok' });
    expect(received.map((r) => `${r.method} ${r.url}`)).toEqual(Array(3).fill('GET /health'));
    expect(waits).toEqual([2_000, 1_000]);
  });

  it('sends a write again with the same body (its control_id makes it safe)', async () => {
    const ack = { ack: 'applied', seq: 3 };
    script = [unavailable('0'), { status: 200, body: ack }];
    const { client, waits } = recordingClient();

    const answer = await client.stop('run-1', { reason: 'retried' });

    expect(answer).toEqual(ack);
    expect(received).toHaveLength(2);
    expect(received[1]?.body).toBe(received[0]?.body);
    expect(JSON.parse(received[0]?.body ?? '{}')).toMatchObject({
      command: 'stop',
      reason: 'retried',
      control_id: expect.any(String),
    });
    expect(waits).toEqual([0]);
  });

  it('backs off without Retry-After, and throws the last answer once its tries are spent', async () => {
    script = [unavailable()];
    const { client, waits } = recordingClient({ attempts: 3, backoffMs: 100 });

    const err = (await client.health().catch((e: unknown) => e)) as ApiError;

    expect(received).toHaveLength(3);
    expect(waits).toEqual([100, 200]);
    expect(err).toMatchObject({ name: 'ApiError', code: 'store_unavailable', status: 503, retryable: true });
    expect(err.retryAfterSeconds).toBeUndefined();
  });

  it('throws a Retry-After longer than maxWaitMs at once, for the caller to decide', async () => {
    script = [tooManyWaits('60'), HEALTHY];
    const { client, waits } = recordingClient({ maxWaitMs: 10_000 });

    const err = (await client.health().catch((e: unknown) => e)) as ApiError;

    expect(received).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(err).toMatchObject({
      code: 'too_many_waits',
      status: 429,
      retryAfterSeconds: 60,
      retryable: true,
    });
  });

  it('reads a Retry-After given as an HTTP date', async () => {
    script = [unavailable(new Date(Date.now() + 60_000).toUTCString()), HEALTHY];
    const { client, waits } = recordingClient({ maxWaitMs: 120_000 });

    await client.health();

    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(50_000);
    expect(waits[0]).toBeLessThanOrEqual(61_000);
  });

  it('never retries another answer, nor at all with attempts 1', async () => {
    script = [{ status: 409, body: { code: 'run_terminal', message: 'ended', details: {} } }];
    const first = recordingClient();
    const terminal = await first.client.health().catch((e: unknown) => e);
    expect(terminal).toMatchObject({ code: 'run_terminal', status: 409, retryable: false });
    expect(received).toHaveLength(1);

    script = [unavailable('1'), HEALTHY];
    received = [];
    const off = recordingClient({ attempts: 1 });
    await expect(off.client.health()).rejects.toMatchObject({ code: 'store_unavailable' });
    expect(received).toHaveLength(1);
    expect(off.waits).toEqual([]);
  });

  it('keeps a code it does not know in details.code, under http_<status>', async () => {
    script = [{ status: 418, body: { code: 'teapot_refused', message: 'no', details: { x: 1 } } }];
    const { client } = recordingClient();
    const err = await client.health().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'http_418', status: 418, details: { x: 1, code: 'teapot_refused' } });
  });
});
