/**
 * The route list of docs/reference/http-api.md, rendered from the OpenAPI document that
 * `GET /openapi.json` serves (lib/http/app.ts's openApiDocument): one table per tag, one row per
 * operation with its method and path, operationId, summary and whether it needs a bearer token.
 * `node bin/write-http-docs.ts` rewrites the page's generated section; a unit test fails while
 * the committed page differs.
 */
import type { Engine } from '../engine/engine.ts';
import { openApiDocument } from '../http/app.ts';
import { bearerTokenAuth, createHttpApp } from '../http/index.ts';
import { InMemoryFunctionRegistry } from '../sandbox/function-registry.ts';
import { replaceSection } from './generated-section.ts';

/** Where the page is committed, relative to the repository root. */
export const HTTP_REFERENCE_PATH = 'docs/reference/http-api.md';
const SECTION = 'routes';
const COMMAND = 'node bin/write-http-docs.ts';

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
}

interface OpenApiShape {
  paths: Record<string, Record<string, Operation>>;
  tags?: { name: string; description?: string }[];
}

/** The OpenAPI document of the API's routes (no engine behind it: only the routes are read). */
export function apiDocument(): Record<string, unknown> {
  const app = createHttpApp({
    engine: {} as Engine,
    functions: new InMemoryFunctionRegistry(),
    tools: { list: () => [] },
    auth: bearerTokenAuth('unused'),
  });
  return openApiDocument(app);
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** The Markdown of the generated section: a table per tag, in the document's tag order. */
export function renderRoutes(document: Record<string, unknown>): string {
  const doc = document as unknown as OpenApiShape;
  const rows = new Map<string, string[]>();
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const tag = op.tags?.[0] ?? 'other';
      const auth = op.security !== undefined && op.security.length === 0 ? 'none' : 'bearer';
      const row = `| \`${method.toUpperCase()} ${path}\` | \`${op.operationId ?? ''}\` | ${cell(op.summary ?? '')} | ${auth} |`;
      rows.set(tag, [...(rows.get(tag) ?? []), row]);
    }
  }
  const tags = [...(doc.tags ?? []).map((t) => t.name), ...rows.keys()].filter(
    (tag, i, all) => rows.has(tag) && all.indexOf(tag) === i,
  );
  const described = new Map((doc.tags ?? []).map((t) => [t.name, t.description ?? '']));
  return tags
    .flatMap((tag) => [
      `### ${tag}`,
      '',
      ...(described.get(tag) ? [cell(described.get(tag) as string), ''] : []),
      '| Route | operationId | What it does | Auth |',
      '| --- | --- | --- | --- |',
      ...(rows.get(tag) ?? []),
      '',
    ])
    .join('\n');
}

/** `page` (the committed http-api.md) with its route list rendered from `document`. */
export function renderHttpReference(page: string, document: Record<string, unknown> = apiDocument()): string {
  return replaceSection(page, SECTION, COMMAND, renderRoutes(document));
}
