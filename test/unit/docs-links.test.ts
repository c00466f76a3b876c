/**
 * The docs' relative links: every link in README.md and docs/**\/*.md that is not a URL points
 * to a file or folder that exists in the repository, and a `#fragment` on a Markdown target
 * names one of that file's headings (GitHub's slugs: lowercase, punctuation dropped, spaces to
 * hyphens). Links inside code blocks and inline code are not links and are skipped.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks and inline code spans. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Link targets of `[text](target)` and `![alt](target)`, with an optional title dropped. */
function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  for (const match of prose(markdown).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    targets.push(match[1] as string);
  }
  return targets;
}

/** GitHub's anchor for a heading's text. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_[\]()]/g, '')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1] as string);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** What is wrong with one link of `file`, or null when it resolves. */
function brokenLink(file: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // https:, mailto: and the like
  const [pathPart, fragment] = target.split('#', 2) as [string, string | undefined];
  const path = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
  if (!path.startsWith(ROOT)) return `${target}: outside the repository`;
  if (!existsSync(path)) return `${target}: no such file (${relative(ROOT, path)})`;
  if (fragment !== undefined && fragment !== '' && statSync(path).isFile() && path.endsWith('.md')) {
    if (!anchors(readFileSync(path, 'utf8')).has(fragment)) {
      return `${target}: no heading #${fragment} in ${relative(ROOT, path)}`;
    }
  }
  return null;
}

const files = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))];

describe('relative links in README.md and docs/', () => {
  it('finds the docs pages and their links', () => {
    expect(files.length).toBeGreaterThan(10);
    expect(linkTargets(readFileSync(join(ROOT, 'README.md'), 'utf8'))).toContain('docs/concepts.md');
  });

  it.each(files.map((file) => [relative(ROOT, file), file]))('%s: every link resolves', (_name, file) => {
    const broken = linkTargets(readFileSync(file, 'utf8'))
      .map((target) => brokenLink(file, target))
      .filter((problem) => problem !== null);
    expect(broken).toEqual([]);
  });
});

describe('the link checker', () => {
  const readme = join(ROOT, 'README.md');

  it('refuses a missing file, a missing heading and a path outside the repository', () => {
    expect(brokenLink(readme, 'docs/no-such-page.md')).toContain('no such file');
    expect(brokenLink(readme, 'docs/concepts.md#no-such-heading')).toContain('no heading');
    expect(brokenLink(readme, '../../etc/passwd')).toContain('outside the repository');
  });

  it('accepts an existing file, a heading of it, and URLs', () => {
    expect(brokenLink(readme, 'docs/concepts.md#lease-and-fence')).toBeNull();
    expect(brokenLink(readme, '#quickstart')).toBeNull();
    expect(brokenLink(readme, 'https://example.com/missing')).toBeNull();
  });

  it('skips links in code and slugs headings as GitHub does', () => {
    expect(linkTargets('`[a](missing.md)`\n```\n[b](gone.md)\n```\n[c](here.md)')).toEqual(['here.md']);
    expect(slug('WebAssembly ABI (core modules)')).toBe('webassembly-abi-core-modules');
    expect(slug('Storage: one write per step')).toBe('storage-one-write-per-step');
  });
});
