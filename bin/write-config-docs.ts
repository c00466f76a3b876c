#!/usr/bin/env node
/**
 * `node bin/write-config-docs.ts`: writes docs/reference/configuration.md from the configuration
 * schema (lib/config.ts). Run it after changing the schema; the config unit test fails until the
 * committed file matches.
 */
import { writeFile } from 'node:fs/promises';
import { CONFIG_REFERENCE_PATH, renderConfigReference } from '../lib/checker/config-reference.ts';

await writeFile(CONFIG_REFERENCE_PATH, renderConfigReference());
console.log(`wrote ${CONFIG_REFERENCE_PATH}`);
