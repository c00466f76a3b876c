#!/usr/bin/env node
/**
 * `node bin/write-error-docs.ts`: writes docs/reference/errors.md from the catalogue of error
 * codes (lib/contracts/error-codes.ts). Run it after changing the catalogue; the error-codes
 * unit test fails until the committed file matches.
 */
import { writeFile } from 'node:fs/promises';
import { ERROR_REFERENCE_PATH, renderErrorReference } from '../lib/checker/error-reference.ts';

await writeFile(ERROR_REFERENCE_PATH, renderErrorReference());
console.log(`wrote ${ERROR_REFERENCE_PATH}`);
