/**
 * What `npm start` prints once the local stack serves: where to reach it (URL, live socket,
 * console), who the token is and where it is kept, the data folder, the model-turn functions and
 * the tools it serves (the scripted local model when no provider is configured), and a first
 * command.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Runtime } from '../runtime.ts';
import { tracingConfigFromEnv } from '../telemetry/otel.ts';
import type { DefaultIdentity } from './identity.ts';

/** What the banner reads of a running stack (LocalStack fits; no import of stack.ts, which imports this). */
export interface BannerStack {
  startupMs: number;
  url: string;
  wsUrl: string;
  notificationsFile: string;
  token: string;
  identity: DefaultIdentity;
  consoleUrl: string | null;
  consoleDir: string | null;
  stateFile: string | null;
  runtime: Pick<Runtime, 'modelCatalog' | 'tools'>;
}

/** What the banner reads of the options the stack was started with. */
export interface BannerOptions {
  persistDir?: string;
  modelFunctions?: Record<string, unknown>;
  /** What to say of each `modelFunctions` path (default: `(given in code)`). */
  modelDescriptions?: Record<string, string>;
  /**
   * How the user runs the CLI, the start of the `try:` commands (`agent-runs start` passes its
   * cliInvocation); default `npx agent-runs`, which works in the checkout `npm start` runs in.
   */
  cli?: string;
}

/**
 * The banner's first command after the CLI's name: a task-mode default-reducer run offered the sample `echo` tool, so
 * it calls a tool and completes (on the scripted local model as on a real one).
 */
export const TRY_COMMAND =
  'runs create --workspace demo --path /first --reducer /lib/raisin/ai/agent-run-reducer --input \'Echo hello.\' --context \'{"mode":"task","tools":[{"name":"echo","mutating":false}]}\'';

/** The banner's lines for a stack that serves, started with `options`. */
export async function bannerLines(stack: BannerStack, options: BannerOptions): Promise<string[]> {
  const lines = [`agent-runs local stack ready in ${(stack.startupMs / 1000).toFixed(1)} s`];
  lines.push(`  url:    ${stack.url}`);
  lines.push(`  live:   ${stack.wsUrl}  (WebSocket; GET /runs/{id}/events/stream for server-sent events)`);
  lines.push(`  notifications: ${stack.notificationsFile}`);
  lines.push(`  token:  ${stack.token}`);
  const { identity } = stack;
  lines.push(
    `          (user ${identity.user}, admin; ${
      identity.tokenFile === null
        ? 'a new token each start: pass --persist DIR to keep it'
        : `${identity.kept ? 'kept from the last start' : 'new'}, kept in ${identity.tokenFile}`
    })`,
  );
  if (stack.consoleUrl !== null && stack.consoleDir !== null) {
    const built = existsSync(join(stack.consoleDir, 'index.html'));
    lines.push(
      `  console: ${built ? stack.consoleUrl : 'not built: run `npm run console:build`, then open'}`,
    );
    if (!built) lines.push(`           ${stack.consoleUrl}`);
  }
  if (stack.stateFile !== null) lines.push(`  state:  ${stack.stateFile}`);
  lines.push(`  data:   ${options.persistDir !== undefined ? resolve(options.persistDir) : 'in memory'}`);
  lines.push(...tracingBannerLines(process.env));
  lines.push(
    ...modelBannerLines(
      stack.runtime.modelCatalog,
      Object.keys(options.modelFunctions ?? {}),
      options.modelDescriptions,
    ),
  );
  lines.push(...toolBannerLines(await stack.runtime.tools.list()));
  const cli = options.cli ?? 'npx agent-runs';
  lines.push(`  try:    ${cli} ${TRY_COMMAND}`);
  lines.push(`          ${cli} watch RUN_ID   (the run_id printed by runs create; q quits)`);
  lines.push(`          curl -H "Authorization: Bearer ${stack.token}" "${stack.url}/runs?status=running"`);
  lines.push('Press Ctrl-C to stop.');
  return lines;
}

/** The banner's `traces:` line when an OTLP endpoint is set (docs/guides/tracing.md); none when off. */
export function tracingBannerLines(env: NodeJS.ProcessEnv): string[] {
  const config = tracingConfigFromEnv(env);
  if (config === null) return [];
  const content = config.captureContent
    ? 'with payload text (AGENT_RUNS_OTEL_CAPTURE_CONTENT=true)'
    : 'no payload text';
  return [`  traces: OTLP/HTTP to ${config.endpoint} (${content})`];
}

/** The banner's `tools:` lines: the tools a run may call here, by name. */
export function toolBannerLines(tools: readonly { name: string }[]): string[] {
  if (tools.length === 0) return ['  tools:  none registered'];
  const names = tools.map((t) => t.name).sort();
  const lines: string[] = [];
  let line = '';
  for (const name of names) {
    if (line !== '' && line.length + name.length > 80) {
      lines.push(line);
      line = '';
    }
    line = line === '' ? name : `${line}, ${name}`;
  }
  lines.push(line);
  return lines.map((l, i) => `${i === 0 ? '  tools:  ' : '          '}${l}`);
}

const CONFIGURE_HINT = 'BEDROCK_MODEL_ID, or OPENAI_BASE_URL + OPENAI_MODEL (+ OPENAI_API_KEY), and restart.';

/**
 * The banner's `models:` lines: each configured model-turn function (the environment's, see
 * lib/models/configured.ts, and `extraPaths` given in code, described by `descriptions[path]`,
 * else `(given in code)`) and the default a run gets when it names none; how to configure a
 * provider when the environment configures none.
 */
export function modelBannerLines(
  catalog: Runtime['modelCatalog'],
  extraPaths: readonly string[] = [],
  descriptions: Readonly<Record<string, string>> = {},
): string[] {
  const lines = catalog.models.map(
    (m) => `${m.path}  ${m.provider} ${m.model}${m.key !== undefined ? ` (key: ${m.key})` : ''}`,
  );
  for (const path of extraPaths) lines.push(`${path}  ${descriptions[path] ?? '(given in code)'}`);
  if (lines.length === 0) {
    return [
      '  models: none configured: default-reducer runs end model_turn_function_not_found.',
      `          Set ${CONFIGURE_HINT}`,
    ];
  }
  return [
    ...lines.map((line, i) => `${i === 0 ? '  models: ' : '          '}${line}`),
    `          default (a run that names no executor_config.model_turn_function): ${catalog.defaultPath}`,
    ...(catalog.models.length === 0 ? [`          For a real model set ${CONFIGURE_HINT}`] : []),
  ];
}
