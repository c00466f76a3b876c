#!/usr/bin/env node
/**
 * `node bin/write-cli-docs.ts`: rewrites the command list of docs/reference/cli.md (the lines
 * between its GENERATED markers) from the CLI's commander definitions (bin/commands/*); the prose
 * around it is kept. Run it after changing a command or an option;
 * test/unit/generated-docs.test.ts fails until the committed page matches.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { CLI_REFERENCE_PATH, renderCliReference } from './commands/cli-reference.ts';

await writeFile(CLI_REFERENCE_PATH, renderCliReference(await readFile(CLI_REFERENCE_PATH, 'utf8')));
console.log(`wrote ${CLI_REFERENCE_PATH}`);
