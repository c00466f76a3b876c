/**
 * docs/reference/configuration.md, rendered from the one configuration source (lib/config.ts):
 * the models prose, one table of environment variables per part that reads them (type, default,
 * meaning, where the docs explain it), and the engine options with the timing defaults of
 * lib/contracts/timings.ts. `node bin/write-config-docs.ts` writes the file; a unit test fails
 * while the committed file differs from this rendering.
 */
import { NAMES, type ReadBy, VARIABLES, type Variable } from '../config.ts';
import { DEFAULT_TIMINGS } from '../contracts/timings.ts';

/** Where the rendered reference is committed, relative to the repository root. */
export const CONFIG_REFERENCE_PATH = 'docs/reference/configuration.md';

const GROUPS: readonly [ReadBy, string][] = [
  ['runtime', 'Runtime (every function and the local stack)'],
  ['handlers', 'Lambda handlers and the HTTP API'],
  ['models', 'Models'],
  ['tracing', 'Tracing'],
  ['local', 'Local stack and tests'],
  ['cli', 'CLI'],
  ['aws', 'Set by Lambda'],
];

const MODELS = `## Models

\`BEDROCK_MODEL_ID\` (one or more ids, comma-separated) serves each Bedrock model at
\`/lib/models/bedrock/{id}\` and the first at \`/lib/models/bedrock\`; \`OPENAI_BASE_URL\` +
\`OPENAI_MODEL\` (+ \`OPENAI_API_KEY\`, or \`OPENAI_API_KEY_SECRET\` naming a Secrets Manager secret)
serve any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM) at
\`/lib/models/openai\`; \`AGENT_RUNS_MODELS\` serves any AI SDK model as data, a JSON array such as
\`[{"provider":"anthropic","model":"claude-sonnet-4-5","api_key_secret":"prod/anthropic"},
{"provider":"openai-compatible","model":"llama3","base_url":"http://127.0.0.1:11434/v1","path":"/lib/models/ollama"}]\`
(providers \`amazon-bedrock\`, \`anthropic\`, \`openai\`, \`openai-compatible\`; each at its \`path\`,
default \`/lib/models/{provider}/{model}\`; the key only by reference, \`api_key_secret\` or
\`api_key_env\`; optional \`base_url\`, \`region\`, \`timeout_ms\`, \`settings\`; in CDK the
\`aiSdkModels\` prop, which also grants the secret read and Bedrock invoke);
\`AGENT_RUNS_DEFAULT_MODEL\` (\`bedrock\`, \`openai\` or a path) picks the default (else Bedrock
when configured, else OpenAI, else the first \`AGENT_RUNS_MODELS\` entry). A run chooses with \`executor_config.model_turn_function\`;
without one it gets the default, also served at the contract's default path
\`/lib/raisin/ai/agent-run-model-turn\`. \`npm start\` prints which are configured (none: it serves the scripted local model there); a run whose
function is not configured fails with \`model_turn_failed\` and the reason in its
\`operation_failed\` event. A retryable provider fault (429, 5xx, timeout, an undecodable answer)
is called again inside the same turn, up to 3 calls, after a jittered backoff or the provider's
Retry-After (at most 20 s; \`RuntimeConfig.modelRetry\`). The model-turn input's \`agent_ref\` is
\`functions:{the run's reducer path}\`. Each \`model_turn_completed\` event keeps the context
compiler's manifest (\`data.manifest\`: the window, the events \`included\` as seq ranges and those \`excluded\`
with a reason such as \`waiting\` or \`superseded\`; readable with \`GET /runs/{id}/events\`, not
shown to the reducer).`;

/** A table cell: pipes escaped, so a meaning may hold any text. */
const cell = (text: string) => text.replaceAll('|', '\\|');
const seconds = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);

/** The default in words: the schema's own (a ZodDefault), else the variable's `defaultText`, else none. */
function defaultOf(variable: Variable): string {
  const parsed = variable.schema.safeParse(undefined);
  if (parsed.success && parsed.data !== undefined) return `\`${String(parsed.data)}\``;
  return variable.defaultText ?? 'none';
}

/** A link's words from its target: `../guides/local-stack.md#sample-tools` → `local stack: sample tools`. */
function label(href: string): string {
  if (href.startsWith('#')) return `${href.slice(1)} above`;
  const [file = '', anchor] = href.split('#');
  const base = (file.split('/').pop() ?? file).replace(/\.md$/, '').replaceAll('-', ' ');
  return anchor === undefined ? base : `${base}: ${anchor.replaceAll('-', ' ')}`;
}

function row(name: string, variable: Variable): string {
  const where = variable.docs === undefined ? '' : `[${label(variable.docs)}](${variable.docs})`;
  return `| \`${name}\` | ${cell(variable.type)} | ${cell(defaultOf(variable))} | ${cell(variable.meaning)} | ${where} |`;
}

/** The Markdown of docs/reference/configuration.md (ends with a newline). */
export function renderConfigReference(): string {
  const tables = GROUPS.flatMap(([group, title]) => {
    const names = NAMES.filter((name) => VARIABLES[name].readBy === group);
    return [
      `### ${title}`,
      '',
      '| variable | type | default | what it sets | where |',
      '| --- | --- | --- | --- | --- |',
      ...names.map((name) => row(name, VARIABLES[name])),
      '',
    ];
  });
  const t = DEFAULT_TIMINGS;
  return [
    '# Configuration',
    '',
    '<!-- Generated by `node bin/write-config-docs.ts` from lib/config.ts: edit the schema, not this file. -->',
    '',
    MODELS,
    '',
    '## Environment variables',
    '',
    'Every variable is in one schema, lib/config.ts, parsed once per process: a bad value fails the',
    'process at start with `config_invalid` naming the variable. An empty value counts as unset.',
    'A deployment reports its timings at `GET /config` (the CLI hints and the console use them).',
    '',
    ...tables,
    '## Engine and runtime options',
    '',
    'The timing defaults are in one place, lib/contracts/timings.ts.',
    '',
    '| option | default | where |',
    '| --- | --- | --- |',
    `| \`leaseTtlMs\` (AGENT_RUNS_LEASE_TTL_MS) | ${seconds(t.lease_ttl_ms)} | [concepts: lease and fence](../concepts.md#lease-and-fence) |`,
    `| \`heartbeatMs\` (AGENT_RUNS_HEARTBEAT_MS) | ${seconds(t.heartbeat_ms)} | [concepts: lease and fence](../concepts.md#lease-and-fence) |`,
    `| \`stopPollMs\` (AGENT_RUNS_STOP_POLL_MS) | ${seconds(t.stop_poll_ms)} | [concepts: operation](../concepts.md#operation) |`,
    `| \`clockSkewMs\` (EngineOptions/RuntimeConfig, AGENT_RUNS_CLOCK_SKEW_MS) | a third of the lease (${seconds(t.clock_skew_ms)} of ${seconds(t.lease_ttl_ms)}) | [concepts: lease and fence](../concepts.md#lease-and-fence) |`,
    `| the sweeper's period (AGENT_RUNS_SWEEP_INTERVAL_MS) | ${seconds(t.sweep_interval_ms)} (the AWS schedule) | [concepts: lease and fence](../concepts.md#lease-and-fence) |`,
    '| `RuntimeConfig.modelRetry` | up to 3 calls, backoff at most 20 s | [Models](#models) above |',
    '| `earlyResultTtlMs` | 15 minutes | [concepts: tool result](../concepts.md#tool-result) |',
    '| `resultExpiresInMs` | 24 hours | [concepts: tool result](../concepts.md#tool-result) |',
    '| `itemCacheMs` (function registry) | 5 s | [cost per run](../guides/cost-per-run.md) |',
    '| `createEngine({ prices })` | `lib/core/prices.ts` | [cost per run](../guides/cost-per-run.md) |',
    '',
    "A dead holder's run is taken over between the lease's expiry plus the skew allowance and one",
    "sweeper period after that; the CLI's `waiting:` hint and the console's run header both show that",
    'window (lib/contracts/timings.ts `takeoverEstimate`).',
    '',
    '## Deployment options',
    '',
    'The CDK context keys (`-c key=value`) are in the table of [Deploy](../guides/deploy.md).',
    '',
  ].join('\n');
}
