/**
 * Loads the console's run-time configuration from `config.json` beside the page (written by
 * whoever serves the console: lib/http/console.ts), parsed with the same schema the server
 * checks it with. Nothing deployment-specific is compiled into the bundle.
 */
import { ConsoleConfig } from '../../lib/http/console-config.ts';

/** The path the console is served under, e.g. `/console/` (vite's base). */
export const BASE = import.meta.env.BASE_URL;

export async function loadConfig(): Promise<ConsoleConfig> {
  // No extra headers: the request must match index.html's preload to reuse it.
  const response = await fetch(`${BASE}config.json`);
  if (!response.ok) throw new Error(`${BASE}config.json answered HTTP ${response.status}`);
  const parsed = ConsoleConfig.safeParse(await response.json());
  if (!parsed.success) {
    throw new Error(
      `${BASE}config.json is not a console configuration: ${parsed.error.issues[0]?.message ?? ''}`,
    );
  }
  return parsed.data;
}

/** The API's base URL: the configured one, else the console's own origin. */
export function apiBase(config: ConsoleConfig): string {
  return config.api_base ?? window.location.origin;
}
