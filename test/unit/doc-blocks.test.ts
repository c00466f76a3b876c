/**
 * Every code block of README.md and docs/guides/*.md is run by test/e2e/docs.e2e.test.ts or
 * says why not (issue 27, point 2), and the reader of those blocks (test/support/doc-blocks.ts)
 * reads markers, outputs and `http` examples as its docstring says.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  allDocBlocks,
  docBlocks,
  MarkerError,
  matchesOutput,
  mismatches,
  parseExpected,
  parseHttpExample,
  substitute,
  unaccounted,
} from '../support/doc-blocks.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe('the code blocks of the docs', () => {
  const blocks = allDocBlocks(ROOT);

  it('are each run or marked with why not', () => {
    expect(blocks.length).toBeGreaterThan(20);
    expect(blocks.map(unaccounted).filter((problem) => problem !== null)).toEqual([]);
  });

  it('include the client-driven guide in plain HTTP and its example run', () => {
    const guide = blocks.filter((b) => b.file === 'docs/guides/client-driven.md');
    expect(guide.filter((b) => b.lang === 'http').length).toBeGreaterThanOrEqual(8);
    expect(
      guide.some((b) => b.lang === 'sh' && b.body.includes('examples/client-driven/agent-loop.ts')),
    ).toBe(true);
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
