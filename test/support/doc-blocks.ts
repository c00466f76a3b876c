/**
 * The code blocks of the docs as a test reads them: every fenced block of
 * README.md and docs/guides/*.md is run (`sh`: as a bash script; `http`: one request with fetch)
 * or carries a marker on the line before its fence that says how else it is held true:
 *
 * - `<!-- not-tested: REASON -->`: not run, for the reason given (deploys to AWS, needs Docker).
 * - `<!-- doc-test: output -->`: what the block above prints; the test compares (`…` stands for
 *   any text within a line).
 * - `<!-- doc-test: same-as PATH -->`: the file PATH, verbatim.
 * - `<!-- doc-test: excerpt-of PATH -->`: lines of PATH, in order (indentation aside).
 *
 * An `http` block is a request line `METHOD /path`, an optional JSON body, then `HTTP STATUS`
 * and an optional JSON the answer must match: objects by the fields shown, `"…"` any value, a
 * string ending in `…` by its prefix, an array element-wise (a last `"…"`: more may follow).
 * `$NAME` in a request is the value an earlier answer of the page held at `$NAME`; a `$NAME`
 * seen first in an answer captures that value.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export type Marker =
  | { kind: 'not-tested'; reason: string }
  | { kind: 'output' }
  | { kind: 'same-as'; path: string }
  | { kind: 'excerpt-of'; path: string };

export interface DocBlock {
  /** The page, relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  body: string;
  marker: Marker | null;
}

/** Why a marker cannot be read (a typo must not silently skip a block). */
export class MarkerError extends Error {
  override readonly name = 'MarkerError';
}

function parseMarker(line: string, where: string): Marker | null {
  const notTested = /^<!--\s*not-tested:(.*)-->$/.exec(line);
  if (notTested) {
    const reason = (notTested[1] ?? '').trim();
    if (reason === '') throw new MarkerError(`${where}: not-tested needs a reason`);
    return { kind: 'not-tested', reason };
  }
  const docTest = /^<!--\s*doc-test:\s*(.*?)\s*-->$/.exec(line);
  if (!docTest) return null;
  const [kind, path, ...rest] = (docTest[1] ?? '').split(/\s+/);
  if (kind === 'output' && path === undefined) return { kind: 'output' };
  if ((kind === 'same-as' || kind === 'excerpt-of') && path !== undefined && rest.length === 0)
    return { kind, path };
  throw new MarkerError(`${where}: unknown doc-test marker "${line}"`);
}

/** The fenced blocks of one Markdown page, each with the marker before it (or null). */
export function docBlocks(file: string, markdown: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^(\s*)(```|~~~)\s*([\w-]*)/.exec(lines[i] as string);
    if (!open) continue;
    const [, indent = '', fence = '```', lang = ''] = open;
    let end = i + 1;
    while (end < lines.length && !(lines[end] as string).trim().startsWith(fence)) end += 1;
    let before = i - 1;
    while (before >= 0 && (lines[before] as string).trim() === '') before -= 1;
    const marker = before >= 0 ? parseMarker((lines[before] as string).trim(), `${file}:${i + 1}`) : null;
    const body = lines
      .slice(i + 1, end)
      .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
      .join('\n');
    blocks.push({ file, line: i + 1, lang, body, marker });
    i = end;
  }
  return blocks;
}

/** The pages whose blocks are tested: README.md and docs/guides/*.md, relative to `root`. */
export function testedPages(root: string): string[] {
  const guides = readdirSync(join(root, 'docs/guides'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => relative(root, join(root, 'docs/guides', name)));
  return ['README.md', ...guides];
}

/** Every block of the tested pages. */
export function allDocBlocks(root: string): DocBlock[] {
  return testedPages(root).flatMap((file) => docBlocks(file, readFileSync(join(root, file), 'utf8')));
}

/** The languages the test runs. */
export const RUNNABLE = ['sh', 'http'] as const;

/** Why `block` is neither run nor marked, or null when it is one of the two. */
export function unaccounted(block: DocBlock): string | null {
  if (block.marker !== null) return null;
  if ((RUNNABLE as readonly string[]).includes(block.lang)) return null;
  return `${block.file}:${block.line}: a \`${block.lang || 'plain'}\` block is not run: add <!-- not-tested: why --> or a <!-- doc-test: ... --> marker before it`;
}

/** Whether `actual` (text) matches `expected`, line by line, `…` standing for any text. */
export function matchesOutput(expected: string, actual: string): boolean {
  const want = expected.trim().split('\n');
  const got = actual.trim().split('\n');
  if (want.length !== got.length) return false;
  return want.every((line, i) => {
    const pattern = line.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    return new RegExp(`^${pattern.join('.*')}$`).test(got[i] as string);
  });
}

/** One `http` block: the request and what its answer must match. */
export interface HttpExample {
  method: string;
  path: string;
  body: string | null;
  status: number;
  expected: string | null;
}

/** Reads an `http` block. Throws MarkerError when it is not `METHOD /path [body] HTTP STATUS [json]`. */
export function parseHttpExample(block: DocBlock): HttpExample {
  const where = `${block.file}:${block.line}`;
  const lines = block.body.split('\n');
  const request = /^(GET|POST|PUT|DELETE|PATCH) (\/\S*)$/.exec((lines[0] ?? '').trim());
  const answerAt = lines.findIndex((l) => /^HTTP \d{3}$/.test(l.trim()));
  if (!request || answerAt < 0)
    throw new MarkerError(`${where}: an http block is "METHOD /path", body, "HTTP STATUS"`);
  const body = lines.slice(1, answerAt).join('\n').trim();
  const expected = lines
    .slice(answerAt + 1)
    .join('\n')
    .trim();
  return {
    method: request[1] as string,
    path: request[2] as string,
    body: body === '' ? null : body,
    status: Number((lines[answerAt] as string).trim().slice(5)),
    expected: expected === '' ? null : expected,
  };
}

/** `text` with each `$NAME` replaced by its value (a string as is, else its JSON). Throws for an unknown name. */
export function substitute(text: string, vars: ReadonlyMap<string, unknown>): string {
  return text.replace(/\$([A-Z][A-Z0-9_]*)/g, (_all, name: string) => {
    if (!vars.has(name)) throw new MarkerError(`$${name} is used before an answer captured it`);
    const value = vars.get(name);
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/** The expected answer as JSON: a bare `$NAME` becomes the string "$NAME" (a capture or a check). */
export function parseExpected(text: string): unknown {
  return JSON.parse(text.replace(/(?<!")\$([A-Z][A-Z0-9_]*)(?!")/g, '"$$$1"'));
}

/**
 * What in `actual` differs from `expected` (paths, one a line; empty when it matches); records
 * each first-seen `$NAME` into `vars`.
 */
export function mismatches(
  expected: unknown,
  actual: unknown,
  vars: Map<string, unknown>,
  at = '$',
): string[] {
  if (typeof expected === 'string') {
    const capture = /^\$([A-Z][A-Z0-9_]*)$/.exec(expected);
    if (capture) {
      const name = capture[1] as string;
      if (!vars.has(name)) {
        vars.set(name, actual);
        return actual === undefined ? [`${at}: missing (for $${name})`] : [];
      }
      return JSON.stringify(vars.get(name)) === JSON.stringify(actual) ? [] : [`${at}: not $${name}`];
    }
    if (expected === '…') return actual === undefined ? [`${at}: missing`] : [];
    if (expected.endsWith('…'))
      return typeof actual === 'string' && actual.startsWith(expected.slice(0, -1))
        ? []
        : [`${at}: ${JSON.stringify(actual)} does not start with ${JSON.stringify(expected.slice(0, -1))}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${at}: not an array`];
    const open = expected.at(-1) === '…';
    const items = open ? expected.slice(0, -1) : expected;
    if (open ? actual.length < items.length : actual.length !== items.length)
      return [`${at}: ${actual.length} items, expected ${open ? 'at least ' : ''}${items.length}`];
    return items.flatMap((item, i) => mismatches(item, actual[i], vars, `${at}[${i}]`));
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual))
      return [`${at}: not an object`];
    return Object.entries(expected).flatMap(([key, value]) =>
      mismatches(value, (actual as Record<string, unknown>)[key], vars, `${at}.${key}`),
    );
  }
  return expected === actual
    ? []
    : [`${at}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`];
}

/** The inline code spans of `markdown` outside its fenced blocks. */
export function inlineSpans(markdown: string): string[] {
  const prose = markdown.replace(/^\s*(```|~~~)[^\n]*\n[\s\S]*?^\s*\1[^\n]*$/gm, '');
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] as string);
}

/**
 * The routes an inline `METHOD /path` span may mean: `{a|b}` is each of a and b, `[/x]` with
 * and without it, a query dropped. `{id}`-like segments and `...` stay placeholders.
 */
export function routeForms(span: string): { method: string; path: string }[] {
  const match = /^(GET|POST|PUT|DELETE|PATCH) (\/\S*)$/.exec(span);
  if (!match) return [];
  let paths = [(match[2] as string).replace(/\?.*$/, '')];
  for (;;) {
    const next = paths.flatMap((p) => {
      const optional = /\[([^\]]*)\]/.exec(p);
      if (optional) return [p.replace(optional[0], ''), p.replace(optional[0], optional[1] as string)];
      const alternatives = /\{([^}]*\|[^}]*)\}/.exec(p);
      if (alternatives)
        return (alternatives[1] as string).split('|').map((a) => p.replace(alternatives[0], a));
      return [p];
    });
    if (next.length === paths.length && next.every((p, i) => p === paths[i])) break;
    paths = next;
  }
  return paths.map((path) => ({ method: match[1] as string, path }));
}

/** Whether the doc's `path` (placeholders `{x}` and `...`) names the API's `template` (`{param}`s). */
export function namesRoute(path: string, template: string): boolean {
  const pattern = path
    .split(/(\{[^}]*\}|\.\.\.)/)
    .map((part) => {
      if (part === '...') return '.+';
      if (/^\{[^}]*\}$/.test(part)) return '[^/]+';
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return new RegExp(`^${pattern}$`).test(template);
}
