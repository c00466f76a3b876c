/**
 * The size limits of lib/ (docs/architecture.md, "Conventions"): every source file at most 600
 * lines, every function (declared, arrow, method, accessor) at most 120, and `createEngine` a short
 * composition (under 80). The TypeScript parser finds the functions; nothing is compiled.
 * Third-party files kept in the tree as they were shipped (Go's wasm_exec.js) and the built reducer
 * artifact are not ours to split.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const lib = resolve(dirname(fileURLToPath(import.meta.url)), '../../lib');
const MAX_FILE_LINES = 600;
const MAX_FUNCTION_LINES = 120;
const MAX_CREATE_ENGINE_LINES = 80;
/** Files under lib/ that are shipped, not written here (relative to lib/). */
const NOT_OURS = new Set(['sandbox/starlark/wasm_exec.js', 'reducers/agent-loop.js']);

interface FunctionSize {
  where: string;
  name: string;
  lines: number;
}

function sources(): string[] {
  return readdirSync(lib, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|tsx|js)$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => !NOT_OURS.has(relative(lib, file)));
}

function nameOf(node: ts.SignatureDeclaration, file: ts.SourceFile): string {
  if (node.name !== undefined) return node.name.getText(file);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText(file);
  return '(anonymous)';
}

/** Every function with a body in `text`, with its length in lines (first to last, inclusive). */
function functionSizes(path: string, text: string): FunctionSize[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const sizes: FunctionSize[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const last = file.getLineAndCharacterOfPosition(node.end).line;
      sizes.push({
        where: `${relative(lib, path)}:${first + 1}`,
        name: nameOf(node, file),
        lines: last - first + 1,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return sizes;
}

describe('size of lib/', () => {
  it('measures a function from its first line to its last', () => {
    const sizes = functionSizes('x.ts', 'const f = () => {\n  return 1;\n};\nfunction g() {}\n');
    expect(sizes.map((s) => [s.name, s.lines])).toEqual([
      ['f', 3],
      ['g', 1],
    ]);
  });

  it(`has no source file over ${MAX_FILE_LINES} lines`, () => {
    const long = sources()
      .map((file) => ({
        file: relative(lib, file),
        lines: readFileSync(file, 'utf8').split('\n').length - 1,
      }))
      .filter((f) => f.lines > MAX_FILE_LINES);
    expect(long).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = sources()
      .flatMap((file) => functionSizes(file, readFileSync(file, 'utf8')))
      .filter((f) => f.lines > MAX_FUNCTION_LINES);
    expect(long).toEqual([]);
  });

  it(`keeps createEngine a composition under ${MAX_CREATE_ENGINE_LINES} lines`, () => {
    const path = join(lib, 'engine/engine.ts');
    const found = functionSizes(path, readFileSync(path, 'utf8')).filter((f) => f.name === 'createEngine');
    expect(found).toHaveLength(1);
    expect(found[0]?.lines).toBeLessThan(MAX_CREATE_ENGINE_LINES);
  });
});
