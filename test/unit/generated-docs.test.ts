/**
 * The generated parts of the reference pages are current: the route list of
 * docs/reference/http-api.md is the rendering of the OpenAPI document lib/http serves, and the
 * command list of docs/reference/cli.md the rendering of the CLI's commander definitions. The
 * prose around the GENERATED markers is kept by the writers, so only the marked lines are
 * compared. Stale: run `node bin/write-http-docs.ts` / `node bin/write-cli-docs.ts`.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_REFERENCE_PATH, cliProgram, renderCliReference } from '../../bin/commands/cli-reference.ts';
import { GeneratedSectionError, replaceSection } from '../../lib/checker/generated-section.ts';
import { apiDocument, HTTP_REFERENCE_PATH, renderHttpReference } from '../../lib/checker/http-reference.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const page = (path: string) => readFileSync(join(ROOT, path), 'utf8');

describe('docs/reference/http-api.md', () => {
  it('lists every route of the OpenAPI document, and the committed page is the current rendering', () => {
    const committed = page(HTTP_REFERENCE_PATH);
    const document = apiDocument() as { paths: Record<string, Record<string, unknown>> };
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const method of Object.keys(operations)) {
        expect(committed).toContain(`\`${method.toUpperCase()} ${path}\``);
      }
    }
    // Stale: run `node bin/write-http-docs.ts` after changing a route.
    expect(renderHttpReference(committed)).toBe(committed);
  });

  it('keeps the hand-written notes around the generated list', () => {
    expect(page(HTTP_REFERENCE_PATH)).toContain('## What the API refuses at its boundary');
  });
});

describe('docs/reference/cli.md', () => {
  it('lists every command and option of the CLI, and the committed page is the current rendering', () => {
    const committed = page(CLI_REFERENCE_PATH);
    const program = cliProgram();
    for (const command of program.commands) {
      expect(committed).toContain(`\`agent-runs ${command.name()}`);
      for (const option of command.options) expect(committed).toContain(`\`${option.flags}\``);
    }
    // Stale: run `node bin/write-cli-docs.ts` after changing a command or an option.
    expect(renderCliReference(committed)).toBe(committed);
  });

  it('keeps the hand-written notes around the generated list', () => {
    expect(page(CLI_REFERENCE_PATH)).toContain('`test/e2e/waiting-hints.e2e.test.ts` pastes each command');
  });
});

describe('a generated section', () => {
  it('replaces only the lines between its markers', () => {
    const before = 'intro\n<!-- BEGIN GENERATED: x (old) -->\nold\n<!-- END GENERATED: x -->\noutro\n';
    const after = replaceSection(before, 'x', 'cmd', 'new\n');
    expect(after).toBe(
      'intro\n<!-- BEGIN GENERATED: x (by `cmd`: edit the source, not these lines) -->\nnew\n<!-- END GENERATED: x -->\noutro\n',
    );
  });

  it('refuses a page without its markers, or with them twice', () => {
    expect(() => replaceSection('no markers', 'x', 'cmd', 'body')).toThrow(GeneratedSectionError);
    const twice = '<!-- BEGIN GENERATED: x a -->\n<!-- END GENERATED: x -->\n'.repeat(2);
    expect(() => replaceSection(twice, 'x', 'cmd', 'body')).toThrow(GeneratedSectionError);
  });
});
