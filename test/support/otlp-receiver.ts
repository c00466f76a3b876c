/**
 * A real OTLP/HTTP trace receiver for tests: a node:http server that accepts `POST /v1/traces`
 * with the JSON protocol (what @opentelemetry/exporter-trace-otlp-http sends) and keeps every
 * span it received, decoded to plain values.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/** One received span, its attributes decoded (`intValue` as a number, arrays as arrays). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  startMs: number;
  endMs: number;
  statusCode: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

const AnyValue: z.ZodType<unknown> = z.lazy(() =>
  z
    .object({
      stringValue: z.string().optional(),
      intValue: z.union([z.number(), z.string()]).optional(),
      doubleValue: z.number().optional(),
      boolValue: z.boolean().optional(),
      arrayValue: z.object({ values: z.array(AnyValue).default([]) }).optional(),
    })
    .transform((v) => {
      if (v.stringValue !== undefined) return v.stringValue;
      if (v.intValue !== undefined) return Number(v.intValue);
      if (v.doubleValue !== undefined) return v.doubleValue;
      if (v.boolValue !== undefined) return v.boolValue;
      return v.arrayValue?.values;
    }),
);
const KeyValues = z
  .array(z.object({ key: z.string(), value: AnyValue }))
  .default([])
  .transform((kvs) => Object.fromEntries(kvs.map((kv) => [kv.key, kv.value])));
const Nanos = z.union([z.string(), z.number()]).transform((n) => Number(BigInt(n) / 1_000_000n));
const Span = z.object({
  traceId: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().optional(),
  name: z.string(),
  startTimeUnixNano: Nanos,
  endTimeUnixNano: Nanos,
  status: z.object({ code: z.number().optional() }).optional(),
  attributes: KeyValues,
  links: z.array(z.object({ traceId: z.string(), spanId: z.string() })).default([]),
});
const ExportRequest = z.object({
  resourceSpans: z.array(
    z.object({
      resource: z.object({ attributes: KeyValues }).optional(),
      scopeSpans: z.array(z.object({ spans: z.array(Span).default([]) })).default([]),
    }),
  ),
});

export interface OtlpReceiver {
  /** The traces endpoint (`http://127.0.0.1:{port}/v1/traces`). */
  url: string;
  spans: ReceivedSpan[];
  /** service.name of each export request's resources. */
  services: string[];
  /** Requests that were not a POST /v1/traces with a JSON body that parses. */
  refused: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const services: string[] = [];
  const refused: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let parsed: ReturnType<typeof ExportRequest.safeParse> | undefined;
      if (
        req.method === 'POST' &&
        req.url === '/v1/traces' &&
        req.headers['content-type'] === 'application/json'
      ) {
        try {
          parsed = ExportRequest.safeParse(JSON.parse(body));
        } catch {
          parsed = undefined;
        }
      }
      if (parsed === undefined || !parsed.success) {
        refused.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        res.writeHead(400).end();
        return;
      }
      for (const rs of parsed.data.resourceSpans) {
        services.push(String(rs.resource?.attributes['service.name']));
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans)
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId === '' ? undefined : s.parentSpanId,
              name: s.name,
              startMs: s.startTimeUnixNano,
              endMs: s.endTimeUnixNano,
              statusCode: s.status?.code ?? 0,
              attributes: s.attributes,
              links: s.links,
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    services,
    refused,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
