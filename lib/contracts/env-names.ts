/**
 * The names of the environment variables the CLI reads (and a client's user may): the API's
 * base URL, the bearer token, the live WebSocket URL. Plain constants, no imports (no zod),
 * browser-safe, so the CLI's `--help` loads nothing more for them (test/unit/cli-bundle.test.ts);
 * lib/config.ts describes each (type, default, meaning) under the very same name, and
 * test/unit/config.test.ts allows no other file to spell one.
 */
export const CLI_ENV = {
  /** The API's base URL (else `--url`, else the local stack's `.agent-runs/local.json`). */
  AGENT_RUNS_URL: 'AGENT_RUNS_URL',
  /** The bearer token (else `--token`, else the local stack's, for its URL only). */
  AGENT_RUNS_TOKEN: 'AGENT_RUNS_TOKEN',
  /** The live event WebSocket URL (else `--ws-url`, else the local stack's). */
  AGENT_RUNS_WS_URL: 'AGENT_RUNS_WS_URL',
} as const;

/** A variable name of CLI_ENV. */
export type CliEnvName = keyof typeof CLI_ENV;
