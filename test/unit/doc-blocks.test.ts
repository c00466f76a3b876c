/**
 * Every code block of README.md and docs/guides/*.md is run by test/e2e/docs.e2e.test.ts or
 * says why not, and the reader of those blocks (test/support/doc-blocks.ts)
 * reads markers, outputs and `http` examples as its docstring says.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliProgram } from '../../bin/commands/cli-reference.ts';
import { apiDocument } from '../../lib/checker/http-reference.ts';
import {
  allDocBlocks,
  docBlocks,
  inlineSpans,
  MarkerError,
  matchesOutput,
  mismatches,
  namesRoute,
  parseExpected,
  parseHttpExample,
  routeForms,
  substitute,
  testedPages,
  unaccounted,
} from '../support/doc-blocks.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe('the code blocks of the docs', () => {
  const blocks = allDocBlocks(ROOT);

  it('are each run or marked with why not', () => {
    expect(blocks.length).toBeGreaterThan(20);
    expect(blocks.map(unaccounted).filter((problem) => problem !== null)).toEqual([]);
  });

  it('mark files that exist, and outputs after a block that runs', () => {
    const problems = blocks.flatMap((block, i) => {
      const where = `${block.file}:${block.line}`;
      const marker = block.marker;
      if (
        (marker?.kind === 'same-as' || marker?.kind === 'excerpt-of') &&
        !existsSync(join(ROOT, marker.path))
      )
        return [`${where}: no file ${marker.path}`];
      const before = blocks[i - 1];
      if (
        marker?.kind === 'output' &&
        (before?.file !== block.file || before.lang !== 'sh' || before.marker !== null)
      )
        return [`${where}: an output block follows a shell block that runs`];
      return [];
    });
    expect(problems).toEqual([]);
  });

  it('include the client-driven guide in plain HTTP and its example run', () => {
    const guide = blocks.filter((b) => b.file === 'docs/guides/client-driven.md');
    expect(guide.filter((b) => b.lang === 'http').length).toBeGreaterThanOrEqual(8);
    expect(
      guide.some((b) => b.lang === 'sh' && b.body.includes('examples/client-driven/agent-loop.ts')),
    ).toBe(true);
  });
});

/** What is wrong with an inline `agent-runs ...` span: a command or an option the CLI does not have. */
function unknownCliWords(span: string): string | null {
  const words = span.replace(/^npx /, '').replace(/[[\]]/g, ' ').split(/\s+/).slice(1);
  let command = cliProgram();
  const options = [...command.options];
  for (const word of words) {
    const sub = command.commands.find((c) => c.name() === word);
    if (sub === undefined) break;
    command = sub;
    options.push(...sub.options);
  }
  const flags = words.filter((w) => w.startsWith('--'));
  const unknown = flags.filter((flag) => !options.some((o) => o.long === flag));
  if (command.commands.length > 0 && command.name() !== 'agent-runs' && words.length > 1)
    return `${span}: "${command.name()}" needs a subcommand`;
  if (command.name() === 'agent-runs' && words.length > 0) return `${span}: no command "${words[0]}"`;
  return unknown.length > 0 ? `${span}: no option ${unknown.join(', ')}` : null;
}

describe('the inline commands and routes of the docs', () => {
  const spans = testedPages(ROOT).flatMap((file) =>
    inlineSpans(readFileSync(join(ROOT, file), 'utf8')).map((span) => ({ file, span })),
  );

  it('name commands and options the CLI has', () => {
    const commands = spans.filter(({ span }) => /^(npx )?agent-runs [a-z]/.test(span));
    expect(commands.length).toBeGreaterThan(10);
    const wrong = commands.map(
      ({ file, span }) => unknownCliWords(span) && `${file}: ${unknownCliWords(span)}`,
    );
    expect(wrong.filter((w) => w !== null)).toEqual([]);
  });

  it('name routes of the OpenAPI document', () => {
    const paths = (apiDocument() as { paths: Record<string, Record<string, unknown>> }).paths;
    const routes = spans.flatMap(({ file, span }) => routeForms(span).map((r) => ({ file, span, ...r })));
    expect(routes.length).toBeGreaterThan(15);
    const missing = routes.filter(
      ({ method, path }) =>
        !Object.entries(paths).some(
          ([template, ops]) => method.toLowerCase() in ops && namesRoute(path, template),
        ),
    );
    expect(missing.map(({ file, span, path }) => `${file}: ${span} (${path})`)).toEqual([]);
  });

  it('checks spans as it says', () => {
    expect(unknownCliWords('npx agent-runs events RUN --follow --until request_opened')).toBeNull();
    expect(unknownCliWords('agent-runs events RUN --folow')).toContain('no option --folow');
    expect(unknownCliWords('agent-runs run get RUN')).toContain('no command "run"');
    expect(routeForms('GET /runs/{id}/checkpoints[/{n}]').map((r) => r.path)).toEqual([
      '/runs/{id}/checkpoints',
      '/runs/{id}/checkpoints/{n}',
    ]);
    expect(routeForms('POST /admin/{tools|policy}').map((r) => r.path)).toEqual([
      '/admin/tools',
      '/admin/policy',
    ]);
    expect(namesRoute('/functions/...', '/functions/{path}')).toBe(true);
    expect(namesRoute('/admin/{kind}', '/admin/tools')).toBe(true);
    expect(namesRoute('/runs/{id}/lease', '/runs/{id}/leases')).toBe(false);
  });
});

describe('the block reader', () => {
  it('reads the marker before a fence, and refuses an unknown one or a reason left out', () => {
    const page = '<!-- not-tested: deploys -->\n\n```sh\nnpx cdk deploy\n```\n\n```python\nx = 1\n```\n';
    const [marked, bare] = docBlocks('p.md', page);
    expect(marked?.marker).toEqual({ kind: 'not-tested', reason: 'deploys' });
    expect(bare?.marker).toBeNull();
    expect(unaccounted(bare as NonNullable<typeof bare>)).toContain('p.md:7');
    expect(() => docBlocks('p.md', '<!-- doc-test: smae-as x -->\n```sh\nls\n```')).toThrow(MarkerError);
    expect(() => docBlocks('p.md', '<!-- not-tested: -->\n```sh\nls\n```')).toThrow(MarkerError);
  });

  it('matches output line by line with … for any text', () => {
    expect(
      matchesOutput('{"run_id":"run_…","status":"queued"}', '{"run_id":"run_1","status":"queued"}\n'),
    ).toBe(true);
    expect(matchesOutput('a\nb', 'a\nb\nc')).toBe(false);
    expect(matchesOutput('run_…', 'xrun_1')).toBe(false);
  });

  it('reads an http example, substitutes what earlier answers captured, and matches by the fields shown', () => {
    const [block] = docBlocks(
      'p.md',
      '```http\nPOST /runs/$RUN/lease\n{"owner": "me"}\n\nHTTP 200\n{"lease": {"epoch": $EPOCH}, "run": {"run_id": "run_…"}}\n```',
    );
    const example = parseHttpExample(block as NonNullable<typeof block>);
    expect(example).toMatchObject({
      method: 'POST',
      path: '/runs/$RUN/lease',
      body: '{"owner": "me"}',
      status: 200,
    });
    const vars = new Map<string, unknown>([['RUN', 'run_1']]);
    expect(substitute(example.path, vars)).toBe('/runs/run_1/lease');
    expect(() => substitute('$NOPE', vars)).toThrow(MarkerError);
    const expected = parseExpected(example.expected ?? '');
    expect(
      mismatches(expected, { lease: { epoch: 3, owner: 'me' }, run: { run_id: 'run_1' } }, vars),
    ).toEqual([]);
    expect(vars.get('EPOCH')).toBe(3);
    // A second sight of $EPOCH checks it; a wrong prefix and a missing field are named.
    expect(mismatches(expected, { lease: { epoch: 4 }, run: { run_id: 'job_1' } }, vars)).toEqual([
      '$.lease.epoch: not $EPOCH',
      '$.run.run_id: "job_1" does not start with "run_"',
    ]);
    expect(mismatches({ a: [1, '…'] }, { a: [1, 2, 3] }, vars)).toEqual([]);
    expect(mismatches({ a: [1] }, { a: [1, 2] }, vars)).toEqual(['$.a: 2 items, expected 1']);
  });
});
