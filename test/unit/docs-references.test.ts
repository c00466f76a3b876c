/**
 * The code's references to the docs hold: every `docs/....md` named in a comment of lib/, bin/,
 * cdk/, functions/ or console/src/ is a file of the repository, and every section quoted right
 * after it (`docs/contracts/run-lifecycle.md, "Controls", "Budgets"`) is part of one of that
 * page's headings. And no comment of those folders, test/ or examples/ sends a reader outside the
 * repository: no DESIGN section, no seed, no issue number (lib/sandbox/starlark/main.go keeps one: its sha256 is in the Starlark
 * runtime's manifest, so an edit means a rebuild).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const FOLDERS = ['lib', 'bin', 'cdk', 'functions', 'console/src'];
const SOURCE = /\.(ts|tsx|mjs|js|go)$/;
const KEPT = new Set(['lib/sandbox/starlark/main.go', 'test/unit/docs-references.test.ts']);
/** Where no comment may point outside the repository (test/ and examples/ too). */
const ALL_FOLDERS = [...FOLDERS, 'test', 'examples'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sources(path);
    return SOURCE.test(entry.name) ? [path] : [];
  });
}

/** The text with comment line breaks (`\n * `, `\n // `) joined, so a reference may span lines. */
function joined(text: string): string {
  return text.replace(/\n\s*(?:\*|\/\/)\s*/g, ' ');
}

/** `{page, sections}` of every docs reference in `text`. */
function docReferences(text: string): { page: string; sections: string[] }[] {
  return [...joined(text).matchAll(/\bdocs\/([\w/.-]+?\.md)((?:, "[^"]+")*)/g)].map((m) => ({
    page: `docs/${m[1]}`,
    sections: [...(m[2] as string).matchAll(/"([^"]+)"/g)].map((s) => s[1] as string),
  }));
}

function headings(page: string): string[] {
  const text = readFileSync(join(ROOT, page), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return [...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => (m[1] as string).toLowerCase());
}

const files = FOLDERS.flatMap((folder) => sources(join(ROOT, folder)));

describe("the code's references to docs/", () => {
  const refs = files.flatMap((file) =>
    docReferences(readFileSync(file, 'utf8')).map((ref) => ({ file: relative(ROOT, file), ...ref })),
  );

  it('are found (the check has something to check)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(refs.length).toBeGreaterThan(200);
    expect(docReferences(' * docs/a.md, "One",\n * "Two"; docs/b.md.')).toEqual([
      { page: 'docs/a.md', sections: ['One', 'Two'] },
      { page: 'docs/b.md', sections: [] },
    ]);
  });

  it('name pages that exist, and sections those pages have', () => {
    const problems = refs.flatMap(({ file, page, sections }) => {
      if (!existsSync(join(ROOT, page))) return [`${file}: no page ${page}`];
      const heads = headings(page);
      return sections
        .filter((section) => !heads.some((h) => h.includes(section.toLowerCase())))
        .map((section) => `${file}: ${page} has no heading "${section}"`);
    });
    expect(problems).toEqual([]);
  });

  it('replace every reference to a document outside the repository', () => {
    const outside = /\bDESIGN sections?\b|\bSeeds?: |\b[Ii]ssues? \d+|\bSTYLE "/;
    const found = ALL_FOLDERS.flatMap((folder) => sources(join(ROOT, folder)))
      .filter((file) => !KEPT.has(relative(ROOT, file)))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) =>
            outside.test(line) ? [`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`] : [],
          ),
      );
    expect(found).toEqual([]);
  });
});
