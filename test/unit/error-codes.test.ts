/**
 * The one catalogue of error codes (lib/contracts/error-codes.ts) and what is derived from it:
 * every code has a status, a meaning, a remedy and a row in docs/reference/errors.md (which is
 * the catalogue's current rendering); the HTTP status map and the OpenAPI descriptions follow
 * it; and every code the sources raise is in it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_REFERENCE_PATH, renderErrorReference } from '../../lib/checker/error-reference.ts';
import { ERROR_CODES, type ErrorCode, isErrorCode } from '../../lib/contracts/error-codes.ts';
import { HTTP_ERROR_STATUS } from '../../lib/http/errors.ts';
import { ERROR_DESCRIPTIONS } from '../../lib/http/route-parts.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const codes = Object.keys(ERROR_CODES) as ErrorCode[];
const HTTP_STATUSES = new Set([400, 401, 403, 404, 405, 409, 413, 415, 422, 429, 500, 503]);

/** Every .ts file under lib/. */
function libFiles(): string[] {
  return readdirSync(join(ROOT, 'lib'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** The literal first arguments of `new <ctor>('code'` in lib/. */
function raisedCodes(ctor: string): Set<string> {
  const found = new Set<string>();
  const pattern = new RegExp(`new ${ctor}\\(\\s*'([a-z_]+)'`, 'g');
  for (const file of libFiles())
    for (const match of readFileSync(file, 'utf8').matchAll(pattern)) found.add(match[1] as string);
  return found;
}

describe('the catalogue of error codes', () => {
  it('gives every code an HTTP status, a meaning and what to do', () => {
    expect(codes.length).toBeGreaterThan(30);
    for (const code of codes) {
      const entry = ERROR_CODES[code];
      expect(code).toMatch(/^[a-z][a-z_]*[a-z]$/);
      expect(HTTP_STATUSES.has(entry.status), `${code} ${entry.status}`).toBe(true);
      expect(entry.meaning.length, code).toBeGreaterThan(10);
      expect(entry.action.length, code).toBeGreaterThan(5);
    }
  });

  it('gives every code a row of docs/reference/errors.md, and the file is the current rendering', () => {
    const committed = readFileSync(join(ROOT, ERROR_REFERENCE_PATH), 'utf8');
    const rows = committed.split('\n').filter((line) => line.startsWith('| `'));
    expect(rows.map((row) => /^\| `([a-z_]+)`/.exec(row)?.[1])).toEqual(
      [...codes].sort((a, b) => ERROR_CODES[a].status - ERROR_CODES[b].status),
    );
    for (const code of codes)
      expect(committed, code).toContain(`| \`${code}\` | ${ERROR_CODES[code].status} | `);
    // Stale: run `node bin/write-error-docs.ts` after changing lib/contracts/error-codes.ts.
    expect(committed).toBe(renderErrorReference());
  });

  it('is the HTTP status map, code for code', () => {
    expect(Object.keys(HTTP_ERROR_STATUS).sort()).toEqual([...codes].sort());
    for (const code of codes) expect(HTTP_ERROR_STATUS[code]).toBe(ERROR_CODES[code].status);
  });

  it('names every code but the 429s in the OpenAPI description of its status, with its meaning', () => {
    const described = codes.filter((code) => ERROR_CODES[code].status !== 429);
    expect(described.length).toBeGreaterThan(0);
    for (const code of described) {
      const { status, meaning } = ERROR_CODES[code];
      expect(ERROR_DESCRIPTIONS[status], code).toContain(`${code}: ${meaning}`);
    }
  });

  it('holds every code the engine and the HTTP layer raise, the engine ones marked so', () => {
    const engine = raisedCodes('EngineError');
    const http = raisedCodes('HttpError');
    expect(engine.size).toBeGreaterThan(10);
    expect(http.size).toBeGreaterThan(5);
    expect([...engine, ...http].filter((code) => !isErrorCode(code))).toEqual([]);
    expect([...engine].filter((code) => isErrorCode(code) && ERROR_CODES[code].source !== 'engine')).toEqual(
      [],
    );
  });

  it('tells a code of the catalogue from any other string', () => {
    expect(isErrorCode('store_unavailable')).toBe(true);
    expect(isErrorCode('throttled')).toBe(false);
    expect(isErrorCode('toString')).toBe(false);
  });
});
