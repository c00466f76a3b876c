#!/usr/bin/env node
/**
 * `node bin/write-schemas.ts [--out DIR]`: writes `schemas/<name>.schema.json` for every wire
 * contract (see lib/checker/json-schemas.ts) and removes stale `*.schema.json` files there.
 * Run it (`npm run schemas:write`) after changing a zod schema in lib/contracts; the schemas
 * unit test fails until the committed files match.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command } from 'commander';
import { buildJsonSchemas, jsonSchemaFileName, renderJsonSchema } from '../lib/checker/json-schemas.ts';

const program = new Command()
  .name('write-schemas')
  .description('Generate the JSON Schemas of the wire contracts from the zod schemas.')
  .option('--out <dir>', 'output directory', 'schemas')
  .action(async ({ out }: { out: string }) => {
    await mkdir(out, { recursive: true });
    const schemas = buildJsonSchemas();
    const wanted = new Set(Object.keys(schemas).map(jsonSchemaFileName));
    for (const file of await readdir(out)) {
      if (file.endsWith('.schema.json') && !wanted.has(file)) {
        await rm(join(out, file));
        console.log(`removed ${join(out, file)}`);
      }
    }
    for (const [name, schema] of Object.entries(schemas)) {
      await writeFile(join(out, jsonSchemaFileName(name)), renderJsonSchema(schema));
    }
    console.log(`wrote ${wanted.size} schemas to ${out}`);
  });

await program.parseAsync();
