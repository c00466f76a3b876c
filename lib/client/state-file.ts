/**
 * The local stack's state file: `.agent-runs/local.json` in the directory `npm start` ran in,
 * holding `{url, token}` (plus whatever else the local stack records). The local stack writes
 * it at start-up; the CLI reads it for its default URL and token. docs/guides/local-stack.md.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';

/** Path of the state file, relative to the working directory. */
export const LOCAL_STATE_PATH = '.agent-runs/local.json';

/** `{url, token}`: the API's base URL (e.g. `http://127.0.0.1:8787`) and its bearer token. Other fields are kept. */
export const LocalState = z.looseObject({
  url: z.url({ protocol: /^https?$/ }),
  token: z.string().min(1),
  /** The live event WebSocket of the local stack (`ws://127.0.0.1:{port}`). */
  ws_url: z.url({ protocol: /^wss?$/ }).optional(),
});
export type LocalState = z.infer<typeof LocalState>;

/** The state file is there but unreadable or malformed. */
export class LocalStateError extends Error {
  override name = 'LocalStateError';
  /** Always `local_state_invalid`. */
  readonly code = 'local_state_invalid';
  /** The state file's path. */
  readonly path: string;
  constructor(path: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.path = path;
  }
}

/** Reads `{cwd}/.agent-runs/local.json`. Null when there is none; throws LocalStateError when it is malformed. */
export function readLocalState(cwd: string = process.cwd()): LocalState | null {
  const path = join(cwd, LOCAL_STATE_PATH);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new LocalStateError(path, `cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new LocalStateError(path, `${path} is not JSON`, { cause: err });
  }
  const parsed = LocalState.safeParse(json);
  if (!parsed.success) {
    throw new LocalStateError(path, `${path} is not a state file: ${parsed.error.issues[0]?.message ?? ''}`);
  }
  return parsed.data;
}

/** Writes the state file (creating `.agent-runs/`), readable by the owner only (it holds the token). Returns its path. */
export function writeLocalState(state: LocalState, cwd: string = process.cwd()): string {
  const parsed = LocalState.parse(state);
  const path = join(cwd, LOCAL_STATE_PATH);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(parsed, null, 2)}\n`, { mode: 0o600 });
  return path;
}

/** Removes the state file (at shutdown); no error when it is already gone. */
export function removeLocalState(cwd: string = process.cwd()): void {
  rmSync(join(cwd, LOCAL_STATE_PATH), { force: true });
}
