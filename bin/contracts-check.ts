#!/usr/bin/env node
/**
 * `node bin/contracts-check.ts DIR`: checks the contract fixtures under DIR (see
 * lib/checker/contracts-check.ts for the layout). Prints one line per file,
 * `PASS reducer/v1/x.json ok` or `FAIL reducer/v1/x.json expected X got Y: message`, then a final
 * line `N passed, N failed`. Exit code 0 when every fixture passed, 1 on any failure or when DIR
 * is missing or holds no fixture.
 */
import { Command } from 'commander';
import { checkContractFixtures, FixtureDirectoryError } from '../lib/checker/contracts-check.ts';

const program = new Command()
  .name('contracts-check')
  .description('Check reducer/v1 and tool-result/v1 contract fixtures against the validators.')
  .argument('<dir>', 'fixture directory holding reducer/v1/ and/or tool-result/v1/')
  .action(async (dir: string) => {
    try {
      const report = await checkContractFixtures(dir);
      for (const result of report.results) {
        if (result.ok) {
          console.log(`PASS ${result.file} ${result.got}`);
        } else {
          const detail = result.error === undefined ? '' : `: ${result.error}`;
          console.log(`FAIL ${result.file} expected ${result.expected} got ${result.got}${detail}`);
        }
      }
      if (report.results.length === 0)
        console.error(`no fixtures under ${dir}/reducer/v1 or ${dir}/tool-result/v1`);
      console.log(`${report.passed} passed, ${report.failed} failed`);
      if (report.failed > 0 || report.results.length === 0) process.exitCode = 1;
    } catch (error) {
      if (!(error instanceof FixtureDirectoryError)) throw error;
      console.error(error.message);
      console.log('0 passed, 0 failed');
      process.exitCode = 1;
    }
  });

await program.parseAsync();
