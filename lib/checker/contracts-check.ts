/**
 * The contract fixture checker: runs the reducer-response and tool-result validators of lib/core
 * over a directory of JSON fixtures and reports, per file, whether the validator answered what
 * the fixture expects. Used by `bin/contracts-check.ts` and the unit tests; a fixture set is how
 * another implementation of the contracts proves it agrees with this one.
 *
 * Layout: every `.json` file under these two subdirectories (both optional, searched
 * recursively, files taken in path order):
 *   DIR/reducer/v1/      `{request: FixtureRequest, response: unknown, expect: "ok" | ReducerValidationCode, description?}`
 *   DIR/tool-result/v1/  `{envelope: unknown, expect: "ok" | EnvelopeRefusalCode, description?}` (checked with validateToolResult)
 * A fixture carries only the request fields its rule needs (see FixtureRequest): a full request
 * as core sends it is one, and so is `{state_rev: 7}` for a state_rev rule.
 * docs/contracts/reducer.md, "Validation"; docs/contracts/tool-result.md, "The tool-result
 * envelope".
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { z } from 'zod';
import {
  Count,
  defaultField,
  EnvelopeRefusalCode,
  OpenRequestSummary,
  REDUCER_CONTRACT,
  REDUCER_EVENT_KINDS,
  ReducerValidationCode,
} from '../contracts/index.ts';
import { validateReducerResponse } from '../core/reducer-validation.ts';
import { validateToolResult } from '../core/tool-result-validation.ts';

/** What `got` is for a file that could not be read, parsed as JSON, or decoded as a fixture. */
export const INVALID_FIXTURE = 'invalid_fixture';

/**
 * The request of a reducer fixture: only what the validation rules read, each part defaulted
 * when the fixture leaves it out (or sends null). `accept` defaults to
 * ["raisin.agent-run.reducer/1"], `state_rev` to 0, `run.status` to "running",
 * `run.open_requests` and `run.unanswered_calls` to [], `event.kind` to "run_started". Every
 * other field of a full request (run_id, subject, usage, state, the event's seq and data, ...)
 * may be present or not and is not looked at. A field that is given must have its contract
 * type (a bad state_rev makes the fixture invalid, not defaulted).
 */
export const FixtureRequest = z.object({
  accept: defaultField(z.array(z.string()).min(1), () => [REDUCER_CONTRACT]),
  state_rev: defaultField(Count, () => 0),
  run: defaultField(
    z.object({
      status: defaultField(z.string(), () => 'running'),
      open_requests: defaultField(z.array(OpenRequestSummary), () => []),
      unanswered_calls: defaultField(z.array(z.string()), () => []),
    }),
    () => ({ status: 'running', open_requests: [], unanswered_calls: [] }),
  ),
  event: defaultField(
    z.object({ kind: defaultField(z.enum(REDUCER_EVENT_KINDS), () => 'run_started' as const) }),
    () => ({ kind: 'run_started' as const }),
  ),
});
export type FixtureRequest = z.infer<typeof FixtureRequest>;

export const ReducerFixture = z.object({
  description: z.string().optional(),
  request: defaultField(FixtureRequest, () => FixtureRequest.parse({})),
  response: z.unknown(),
  expect: z.union([z.literal('ok'), ReducerValidationCode]),
});
export type ReducerFixture = z.infer<typeof ReducerFixture>;

export const ToolResultFixture = z.object({
  description: z.string().optional(),
  envelope: z.unknown(),
  expect: z.union([z.literal('ok'), EnvelopeRefusalCode]),
});
export type ToolResultFixture = z.infer<typeof ToolResultFixture>;

/**
 * One fixture's outcome. `file` is relative to the checked directory with `/` separators
 * (`reducer/v1/x.json`); `expected` is the fixture's `expect` ("?" when the file does not
 * decode); `got` is "ok", the code the validator returned, or "invalid_fixture"; `error`
 * explains an invalid fixture or carries the validator's message.
 */
export type FixtureResult = { file: string; ok: boolean; expected: string; got: string; error?: string };

export type FixtureReport = { results: FixtureResult[]; passed: number; failed: number };

/** The checked directory does not exist or is not a directory. Terminal. */
export class FixtureDirectoryError extends Error {
  override readonly name = 'FixtureDirectoryError';
  readonly code = 'fixture_dir_missing';
  readonly dir: string;
  constructor(dir: string, options?: ErrorOptions) {
    super(`fixture directory not found: ${dir}`, options);
    this.dir = dir;
  }
}

const SUITES = [
  { under: join('reducer', 'v1'), check: checkReducerFixture },
  { under: join('tool-result', 'v1'), check: checkToolResultFixture },
] as const;

/**
 * Checks every `*.json` fixture under `dir` (layout in the module doc). A file that cannot be
 * read or decoded counts as failed with got "invalid_fixture". An existing directory without
 * fixtures yields an empty report (the CLI treats that as a failure). Throws
 * FixtureDirectoryError when `dir` does not exist.
 */
export async function checkContractFixtures(dir: string): Promise<FixtureReport> {
  const info = await stat(dir).catch((cause: unknown) => {
    throw new FixtureDirectoryError(dir, { cause });
  });
  if (!info.isDirectory()) throw new FixtureDirectoryError(dir);

  const results: FixtureResult[] = [];
  for (const suite of SUITES) {
    for (const path of await listJsonFiles(join(dir, suite.under))) {
      const file = relative(dir, path).split(sep).join('/');
      results.push({ file, ...(await checkFile(path, suite.check)) });
    }
  }
  const passed = results.filter((result) => result.ok).length;
  return { results, passed, failed: results.length - passed };
}

type Verdict = Omit<FixtureResult, 'file'>;

async function checkFile(path: string, check: (json: unknown) => Verdict): Promise<Verdict> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    return invalid(`cannot read JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  return check(json);
}

function checkReducerFixture(json: unknown): Verdict {
  const fixture = ReducerFixture.safeParse(json);
  if (!fixture.success) return invalid(`not a reducer fixture: ${summarize(fixture.error)}`);
  const result = validateReducerResponse(fixture.data.request, fixture.data.response);
  const got = result.ok ? 'ok' : result.code;
  return verdict(fixture.data.expect, got, result.ok ? undefined : withPath(result.message, result.path));
}

function checkToolResultFixture(json: unknown): Verdict {
  const fixture = ToolResultFixture.safeParse(json);
  if (!fixture.success) return invalid(`not a tool-result fixture: ${summarize(fixture.error)}`);
  const result = validateToolResult(fixture.data.envelope);
  return verdict(fixture.data.expect, result.ok ? 'ok' : result.code, result.ok ? undefined : result.message);
}

function verdict(expected: string, got: string, message: string | undefined): Verdict {
  const base = { ok: expected === got, expected, got };
  return message === undefined ? base : { ...base, error: message };
}

function invalid(error: string): Verdict {
  return { ok: false, expected: '?', got: INVALID_FIXTURE, error };
}

/** The zod issues on one line: `path: message; path: message`. */
function summarize(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}

function withPath(message: string, path: string | undefined): string {
  return path === undefined ? message : `${message} (at ${path})`;
}

/** Every `*.json` file under `dir`, recursively, sorted; none when `dir` does not exist. */
async function listJsonFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    },
  );
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.json'))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}
