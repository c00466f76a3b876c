import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { checkContractFixtures, FixtureDirectoryError } from '../../lib/checker/contracts-check.ts';
import {
  ENVELOPE_REFUSAL_CODES,
  EnvelopeRefusalCode,
  REDUCER_CONTRACT,
  REDUCER_VALIDATION_CODES,
} from '../../lib/contracts/index.ts';

const FIXTURES = 'test/fixtures/contracts';
const run = promisify(execFile);

const request = {
  contract: REDUCER_CONTRACT,
  accept: [REDUCER_CONTRACT],
  run: {
    run_id: 'run_1',
    status: 'running',
    turn: 0,
    last_seq: 1,
    usage: {},
    budgets: {},
    open_requests: [],
    unanswered_calls: [],
    subject: { workspace: 'ai', path: '/a' },
  },
  state: null,
  state_rev: 0,
  event: { seq: 1, kind: 'run_started', data: { input: 'hello' } },
};

const temps: string[] = [];
async function tempFixtures(files: Record<string, unknown>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'contracts-check-'));
  temps.push(dir);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}
afterEach(async () => {
  for (const dir of temps.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('checkContractFixtures on the committed fixtures', () => {
  it('passes every committed fixture', async () => {
    const report = await checkContractFixtures(FIXTURES);
    expect(report.results.filter((result) => !result.ok)).toEqual([]);
    expect(report.failed).toBe(0);
    expect(report.passed).toBe(report.results.length);
  });

  it('has an ok and a bad reducer fixture for each of the 13 validation codes', async () => {
    const files = await readdir(join(FIXTURES, 'reducer', 'v1'));
    for (const code of REDUCER_VALIDATION_CODES) {
      expect(files, code).toContain(`${code}.ok.json`);
      expect(files, code).toContain(`${code}.bad.json`);
    }
    expect(files).toEqual(
      expect.arrayContaining(['duplicate-event.ok.json', 'unknown-field.ok.json', 'refused.ok.json']),
    );
  });

  it('has an ok and a bad tool-result fixture for each of the 4 refusal codes, and a legacy value', async () => {
    const files = await readdir(join(FIXTURES, 'tool-result', 'v1'));
    for (const code of ENVELOPE_REFUSAL_CODES) {
      expect(files, code).toContain(`${code}.ok.json`);
      expect(files, code).toContain(`${code}.bad.json`);
    }
    expect(files).toContain('envelope_mismatch.legacy.bad.json');
  });

  it('expects, in every .bad fixture, the code its name starts with', async () => {
    const report = await checkContractFixtures(FIXTURES);
    for (const result of report.results) {
      const name = result.file.split('/').pop() ?? '';
      if (name.endsWith('.bad.json')) expect(result.expected, result.file).toBe(name.split('.')[0]);
      if (name.endsWith('.ok.json')) expect(result.expected, result.file).toBe('ok');
    }
    expect(EnvelopeRefusalCode.options.length).toBe(4);
  });
});

describe('checkContractFixtures', () => {
  it('reports a fixture whose expectation the validator does not meet as failed, with what it got', async () => {
    const dir = await tempFixtures({
      'reducer/v1/a.json': {
        request,
        response: { contract: REDUCER_CONTRACT, state: null, state_rev: 5 },
        expect: 'ok',
      },
      'reducer/v1/b.json': {
        request,
        response: { contract: REDUCER_CONTRACT, state: {}, state_rev: 1 },
        expect: 'ok',
      },
    });
    const report = await checkContractFixtures(dir);
    expect(report).toMatchObject({ passed: 1, failed: 1 });
    expect(report.results[0]).toMatchObject({
      file: 'reducer/v1/a.json',
      ok: false,
      expected: 'ok',
      got: 'state_rev_regressed',
    });
    expect(report.results[1]).toMatchObject({ file: 'reducer/v1/b.json', ok: true, got: 'ok' });
  });

  it('counts a file that does not decode as a fixture, or is not JSON, as failed', async () => {
    const dir = await tempFixtures({
      'reducer/v1/bad-request.json': { request: { state_rev: 'seven' }, response: {}, expect: 'ok' },
      'reducer/v1/bad-expect.json': { request, response: {}, expect: 'weird_code' },
      'tool-result/v1/not-json.json': '{ nope',
      'tool-result/v1/nested/ok.json': {
        envelope: { envelope: 'raisin.tool-result/1', status: 'failed' },
        expect: 'ok',
      },
    });
    const report = await checkContractFixtures(dir);
    expect(report).toMatchObject({ passed: 1, failed: 3 });
    const invalid = report.results
      .filter((result) => result.got === 'invalid_fixture')
      .map((result) => result.file);
    expect(invalid.sort()).toEqual([
      'reducer/v1/bad-expect.json',
      'reducer/v1/bad-request.json',
      'tool-result/v1/not-json.json',
    ]);
    expect(report.results.find((result) => result.file === 'tool-result/v1/nested/ok.json')?.ok).toBe(true);
  });

  it('judges fixtures that carry only the request fields their rule needs (peer interop)', async () => {
    const answer = (stateRev: number, effects: unknown[] = []) => ({
      contract: REDUCER_CONTRACT,
      state: { n: stateRev },
      state_rev: stateRev,
      effects,
    });
    const modelTurn = (id: string) => ({ effect_id: id, kind: 'request_model_turn', tools_offered: [] });
    const { subject: _subject, ...runWithoutSubject } = request.run;
    const dir = await tempFixtures({
      // A minimal request as a peer writes it: no run.subject, effect_id null on user_input.
      'reducer/v1/open_requests_unresolved.minimal.bad.json': {
        request: {
          contract: REDUCER_CONTRACT,
          accept: [REDUCER_CONTRACT],
          run: {
            ...runWithoutSubject,
            open_requests: [{ request_id: 'req_1', kind: 'input', effect_id: null }],
          },
          state: null,
          state_rev: 3,
          event: { seq: 9, kind: 'user_input', effect_id: null, data: { steer_id: 's1', input: 'hi' } },
        },
        response: answer(4, [modelTurn('4:0')]),
        expect: 'open_requests_unresolved',
      },
      // Only the field the rule reads.
      'reducer/v1/state_rev_regressed.only-rev.bad.json': {
        request: { state_rev: 7 },
        response: answer(5),
        expect: 'state_rev_regressed',
      },
      'reducer/v1/effects_after_terminal.only-status.bad.json': {
        request: { run: { status: 'completed' }, state_rev: 1 },
        response: answer(2, [modelTurn('2:0')]),
        expect: 'effects_after_terminal',
      },
      'reducer/v1/contract_mismatch.no-request.bad.json': {
        response: { ...answer(0), contract: 'other/1' },
        expect: 'contract_mismatch',
      },
    });
    const report = await checkContractFixtures(dir);
    expect(report.results.filter((result) => !result.ok)).toEqual([]);
    expect(report.passed).toBe(4);
  });

  it('ignores files that are not .json and directories other than reducer/v1 and tool-result/v1', async () => {
    const dir = await tempFixtures({ 'reducer/v1/readme.md': '# x', 'reducer/v2/a.json': { expect: 'ok' } });
    expect(await checkContractFixtures(dir)).toEqual({ results: [], passed: 0, failed: 0 });
  });

  it('throws FixtureDirectoryError for a missing directory', async () => {
    await expect(checkContractFixtures(join(tmpdir(), 'no-such-fixtures-dir-7f3a'))).rejects.toBeInstanceOf(
      FixtureDirectoryError,
    );
  });
});

describe('bin/contracts-check.ts', () => {
  const cli = (dir: string) =>
    run(process.execPath, ['bin/contracts-check.ts', dir]).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
    );

  it('prints a PASS line per fixture and a final tally, exiting 0 on the committed fixtures', async () => {
    const { code, stdout } = await cli(FIXTURES);
    const lines = stdout.trim().split('\n');
    const report = await checkContractFixtures(FIXTURES);
    expect(code).toBe(0);
    expect(lines).toContain('PASS reducer/v1/duplicate-event.ok.json ok');
    expect(lines).toContain('PASS tool-result/v1/writes_without_primary.bad.json writes_without_primary');
    expect(lines.at(-1)).toBe(`${report.passed} passed, 0 failed`);
    expect(lines).toHaveLength(report.results.length + 1);
  });

  it('prints FAIL with expected and got, and exits 1, when a fixture fails', async () => {
    const dir = await tempFixtures({
      'reducer/v1/x.json': {
        request,
        response: { contract: 'nope', state: null, state_rev: 0 },
        expect: 'ok',
      },
    });
    const { code, stdout } = await cli(dir);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^FAIL reducer\/v1\/x\.json expected ok got contract_mismatch/m);
    expect(stdout.trim().split('\n').at(-1)).toBe('0 passed, 1 failed');
  });

  it('exits 1 for a missing directory and for one without fixtures', async () => {
    expect((await cli(join(tmpdir(), 'no-such-fixtures-dir-7f3a'))).code).toBe(1);
    const empty = await tempFixtures({});
    const { code, stdout } = await cli(empty);
    expect(code).toBe(1);
    expect(stdout.trim()).toBe('0 passed, 0 failed');
  });
});
