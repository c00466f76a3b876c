import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const lib = resolve(dirname(fileURLToPath(import.meta.url)), '../../lib');

/**
 * Every .ts/.js file under lib/ → the lib/ files it imports (relative specifiers only, type-only
 * imports and re-exports included: a circle of types still ties two modules into one). The
 * TypeScript scanner reads the import list; nothing is compiled.
 */
function importGraph(): Map<string, string[]> {
  const files = readdirSync(lib, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|js)$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    graph.set(
      file,
      importedFiles
        .map((imported) => imported.fileName)
        .filter((specifier) => specifier.startsWith('.'))
        .map((specifier) => resolve(dirname(file), specifier)),
    );
  }
  return graph;
}

/** One circle per back edge of a depth-first walk, as `a.ts -> b.ts -> a.ts` relative to lib/. */
function circles(graph: Map<string, string[]>): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const found = new Set<string>();
  const visit = (file: string): void => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      const seen = state.get(next);
      if (seen === 'open') {
        const loop = [...path.slice(path.indexOf(next)), next];
        found.add(loop.map((f) => relative(lib, f)).join(' -> '));
      } else if (seen === undefined) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return [...found];
}

/**
 * The imports from a file under folder `from` (relative to lib/, e.g. `store/`) of a file under
 * folder `to`, but for the files named in `except`, as `a.ts -> b.ts` relative to lib/.
 */
function crossings(graph: Map<string, string[]>, from: string, to: string, except: string[] = []): string[] {
  const found: string[] = [];
  for (const [file, imports] of graph) {
    const source = relative(lib, file);
    if (!source.startsWith(from)) continue;
    for (const imported of imports) {
      const target = relative(lib, imported);
      if (target.startsWith(to) && !except.includes(target)) found.push(`${source} -> ${target}`);
    }
  }
  return found;
}

describe('import graph of lib/', () => {
  it('finds a circle when one exists (the check can fail)', () => {
    const graph = new Map([
      ['/x/a.ts', ['/x/b.ts']],
      ['/x/b.ts', ['/x/a.ts']],
    ]);
    expect(circles(graph)).toHaveLength(1);
  });

  it('has no import circle anywhere in lib/', () => {
    expect(circles(importGraph())).toEqual([]);
  });

  it('finds an import across a banned line when one exists (the check can fail)', () => {
    const graph = new Map([
      [join(lib, 'engine/sweep.ts'), [join(lib, 'store/table.ts'), join(lib, 'engine/ports.ts')]],
      [join(lib, 'store/table.ts'), [join(lib, 'engine/ports.ts'), join(lib, 'engine/deps.ts')]],
    ]);
    expect(crossings(graph, 'engine/', 'store/')).toEqual(['engine/sweep.ts -> store/table.ts']);
    expect(crossings(graph, 'store/', 'engine/', ['engine/ports.ts'])).toEqual([
      'store/table.ts -> engine/deps.ts',
    ]);
  });

  it('lets lib/engine import no module of lib/store (what they share lives in the ports or core)', () => {
    const graph = importGraph();
    expect(
      [...graph.keys()].filter((file) => relative(lib, file).startsWith('engine/')).length,
    ).toBeGreaterThan(10);
    expect(crossings(graph, 'engine/', 'store/')).toEqual([]);
  });

  it('lets lib/store import only the ports of lib/engine (lib/engine/ports.ts)', () => {
    const graph = importGraph();
    expect(crossings(graph, 'store/', 'engine/')).not.toEqual([]);
    expect(crossings(graph, 'store/', 'engine/', ['engine/ports.ts'])).toEqual([]);
  });

  it('lets lib/core import only lib/core and lib/contracts, and lib/contracts only itself', () => {
    const upward: string[] = [];
    for (const [file, imports] of importGraph()) {
      const from = relative(lib, file);
      const allowed = from.startsWith('core/')
        ? ['core/', 'contracts/']
        : from.startsWith('contracts/')
          ? ['contracts/']
          : null;
      if (allowed === null) continue;
      for (const imported of imports) {
        const to = relative(lib, imported);
        if (!allowed.some((folder) => to.startsWith(folder))) upward.push(`${from} -> ${to}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('lets lib/ai-sdk import lib/client only through its index (the package build makes that the peer)', () => {
    const outside: string[] = [];
    let throughIndex = 0;
    for (const [file, imports] of importGraph()) {
      const from = relative(lib, file);
      if (!from.startsWith('ai-sdk/')) continue;
      for (const imported of imports) {
        const to = relative(lib, imported);
        if (to === 'client/index.ts') throughIndex += 1;
        else if (!to.startsWith('ai-sdk/') && !to.startsWith('contracts/')) outside.push(`${from} -> ${to}`);
      }
    }
    expect(throughIndex).toBeGreaterThan(0);
    expect(outside).toEqual([]);
  });

  it('lets only lib/local import the scripted local model (a deployed stack never serves it)', () => {
    const importers: string[] = [];
    for (const [file, imports] of importGraph()) {
      const from = relative(lib, file);
      if (imports.some((i) => relative(lib, i) === 'models/scripted.ts')) importers.push(from);
    }
    expect(importers.length).toBeGreaterThan(0);
    expect(importers.filter((from) => !from.startsWith('local/'))).toEqual([]);
  });

  it('lets only the Lambda container import the Powertools Tracer (its X-Ray SDK hooks every promise)', () => {
    const importers: string[] = [];
    for (const [file, imports] of importGraph()) {
      if (imports.some((i) => relative(lib, i) === 'handlers/powertools.ts'))
        importers.push(relative(lib, file));
    }
    expect(importers).toEqual(['handlers/container.ts']);
    const tracer = [...importGraph()]
      .filter(([file]) => readFileSync(file, 'utf8').includes("'@aws-lambda-powertools/tracer'"))
      .map(([file]) => relative(lib, file));
    expect(tracer).toEqual(['handlers/powertools.ts']);
  });
});
