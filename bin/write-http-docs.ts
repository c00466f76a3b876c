#!/usr/bin/env node
/**
 * `node bin/write-http-docs.ts`: rewrites the route list of docs/reference/http-api.md (the lines
 * between its GENERATED markers) from the OpenAPI document of lib/http; the prose around it is
 * kept. Run it after changing a route; test/unit/generated-docs.test.ts fails until the
 * committed page matches.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { HTTP_REFERENCE_PATH, renderHttpReference } from '../lib/checker/http-reference.ts';

await writeFile(HTTP_REFERENCE_PATH, renderHttpReference(await readFile(HTTP_REFERENCE_PATH, 'utf8')));
console.log(`wrote ${HTTP_REFERENCE_PATH}`);
