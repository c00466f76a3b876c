#!/usr/bin/env node
/**
 * `node bin/build-reducers.ts` (`npm run build:reducers`): bundles the default agent reducer's
 * TypeScript sources (lib/reducers/agent-loop/) into lib/reducers/agent-loop.js, the artifact the
 * sandbox runs, and prints its size and sha256. Run it after changing the sources and commit the
 * result; test/unit/agent-reducer-build.test.ts fails until the committed file matches, and its
 * AGENT_LOOP_SHA256 constant must then be set to the hash printed here.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { artifactHash, buildAgentLoop } from '../lib/reducers/build.ts';
import { AGENT_LOOP_ARTIFACT_URL } from '../lib/reducers/index.ts';

const program = new Command()
  .name('build-reducers')
  .description('Bundle the built-in reducers from their TypeScript sources into their artifacts.')
  .action(async () => {
    const text = await buildAgentLoop();
    await writeFile(AGENT_LOOP_ARTIFACT_URL, text);
    const bytes = Buffer.byteLength(text, 'utf8');
    console.log(
      `wrote ${fileURLToPath(AGENT_LOOP_ARTIFACT_URL)}: ${bytes} bytes, sha256 ${artifactHash(text)}`,
    );
  });

await program.parseAsync();
