/**
 * Every `@example` block of a docstring in lib/ is type-checked as a file of its own, the way a
 * user pastes it, by the TypeScript compiler in this process (the repository's tsconfig.json).
 * An example writes its own imports: from the repository root (`./lib/...`), or `@agent-runs/client`
 * for the client package (mapped to lib/client/index.ts, what packages/client publishes). An
 * example on a member of AgentRunsClient starts where createClient's example leaves off:
 * `client` (an AgentRunsClient) and `runId` (a run's id) are given.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** What an example on a member of these declarations may use without writing it. */
const GIVENS: Record<string, string> = {
  AgentRunsClient: [
    "import type { AgentRunsClient } from '@agent-runs/client';",
    'declare const client: AgentRunsClient;',
    'declare const runId: string;',
  ].join('\n'),
};

/** The declarations a user starts from: each carries at least one example. */
const MUST_HAVE_EXAMPLES = [
  'createEngine',
  'createDynamoRunStore',
  'createClient',
  ...[
    'createRun',
    'getRun',
    'listRuns',
    'listRunEvents',
    'followEvents',
    'forkRun',
    'applyControl',
    'stop',
    'pause',
    'resume',
    'steer',
    'approve',
    'answer',
    'deliverResult',
  ].map((method) => `AgentRunsClient.${method}`),
];

interface Example {
  /** `lib/x.ts:LINE`, the line of the `@example` tag. */
  at: string;
  /** The declaration documented: `name`, or `Owner.member` inside an interface or class. */
  of: string;
  /** The owning interface or class, if any (it picks the givens). */
  owner: string | undefined;
  code: string;
}

/**
 * The code of each `@example` tag of one `/** ... *\/` comment, with the line (0-based, in the
 * comment) of its tag. An example runs until the next tag or the end of the comment; a Markdown
 * fence around it is dropped.
 */
function examplesOfComment(comment: string): { line: number; code: string }[] {
  const lines = comment
    .replace(/^\/\*\*/, '')
    .replace(/\*\/$/, '')
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''));
  const found: { line: number; code: string[] }[] = [];
  let current: { line: number; code: string[] } | null = null;
  lines.forEach((line, i) => {
    if (/^@\w/.test(line)) {
      current = line.startsWith('@example') ? { line: i, code: [] } : null;
      if (current !== null) found.push(current);
    } else current?.code.push(line);
  });
  return found.map(({ line, code }) => ({
    line,
    code: code
      .filter((text) => !/^```/.test(text))
      .join('\n')
      .trim(),
  }));
}

const nameOf = (node: ts.Node): string | undefined => {
  if (ts.isVariableStatement(node)) return node.declarationList.declarations[0]?.name.getText();
  const name = (node as { name?: ts.Node }).name;
  return name !== undefined && ts.isIdentifier(name) ? name.text : undefined;
};

/** Every `@example` of the docstrings in `file`. */
function examplesOf(file: string): Example[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const seen = new Set<number>();
  const found: Example[] = [];
  const visit = (node: ts.Node, owner: string | undefined): void => {
    for (const range of ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []) {
      const comment = text.slice(range.pos, range.end);
      if (seen.has(range.pos) || !comment.startsWith('/**')) continue;
      seen.add(range.pos);
      const name = nameOf(node) ?? '?';
      const first = source.getLineAndCharacterOfPosition(range.pos).line + 1;
      for (const { line, code } of examplesOfComment(comment)) {
        const of = owner === undefined ? name : `${owner}.${name}`;
        found.push({ at: `${relative(root, file)}:${first + line}`, of, owner, code });
      }
    }
    const inner = ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node) ? node.name?.text : owner;
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, undefined);
  return found;
}

/** Every `@example` under lib/. */
function libExamples(): Example[] {
  return readdirSync(join(root, 'lib'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => readFileSync(file, 'utf8').includes('@example'))
    .flatMap(examplesOf);
}

/**
 * Type-checks each snippet as a module at the repository root (so `./lib/...` resolves) with
 * the repository's compiler options; returns each snippet's errors as `LINE: message`, the line
 * counted in the snippet's own code (after `prelude`).
 */
function typeErrors(snippets: { code: string; prelude?: string }[]): string[][] {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (parsed === undefined) throw new Error('tsconfig.json could not be read');
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: true,
    baseUrl: root,
    paths: { '@agent-runs/client': ['lib/client/index.ts'] },
  };
  const files = snippets.map(({ code, prelude }, i) => ({
    name: join(root, `example-snippet-${i}.ts`),
    offset: prelude === undefined ? 0 : prelude.split('\n').length,
    text: `${prelude === undefined ? '' : `${prelude}\n`}${code}\nexport {};\n`,
  }));
  const virtual = new Map(files.map((f) => [f.name, f.text]));
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => {
    const text = virtual.get(name);
    return text === undefined
      ? getSourceFile(name, language, ...rest)
      : ts.createSourceFile(name, text, language, true);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => virtual.has(name) || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => virtual.get(name) ?? readFile(name);
  const program = ts.createProgram(
    files.map((f) => f.name),
    options,
    host,
  );
  return files.map(({ name, offset }) => {
    const source = program.getSourceFile(name);
    if (source === undefined) return [`${name} was not compiled`];
    return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map(
      (d) => {
        const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line + 1;
        return `${line - offset}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
      },
    );
  });
}

describe('the @example blocks of lib/', () => {
  it('reports an example that does not type-check, at its line (the check can fail)', () => {
    const [good, bad] = typeErrors([
      { code: "import { createClient } from '@agent-runs/client';\ncreateClient({ baseUrl: 'x' });" },
      {
        code: "const n: number = runId;\nawait client.stop(runId, { reason: 'x' });",
        prelude: GIVENS.AgentRunsClient as string,
      },
    ]);
    expect(good).toEqual([]);
    expect(bad).toHaveLength(1);
    expect(bad?.[0]).toMatch(/^1: Type 'string' is not assignable to type 'number'/);
  });

  it('reads the code of each @example tag up to the next tag', () => {
    const comment = '/**\n * Does x.\n *\n * @example\n * const a = 1;\n *   a;\n * @returns y\n */';
    expect(examplesOfComment(comment)).toEqual([{ line: 3, code: 'const a = 1;\n  a;' }]);
  });

  it('gives an example to each factory a user starts from and to the main client methods', () => {
    const documented = new Set(libExamples().map((example) => example.of));
    expect(MUST_HAVE_EXAMPLES.filter((name) => !documented.has(name))).toEqual([]);
  });

  it('type-checks every @example of lib/ as a file of its own', { timeout: 120_000 }, () => {
    const examples = libExamples();
    expect(examples.length).toBeGreaterThanOrEqual(MUST_HAVE_EXAMPLES.length);
    const errors = typeErrors(
      examples.map((example) => ({
        code: example.code,
        ...(example.owner !== undefined && GIVENS[example.owner] !== undefined
          ? { prelude: GIVENS[example.owner] }
          : {}),
      })),
    );
    const failing = examples.flatMap((example, i) =>
      (errors[i] ?? []).map((error) => `${example.at} (${example.of}) line ${error}`),
    );
    expect(failing).toEqual([]);
  });
});
