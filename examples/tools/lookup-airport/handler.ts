/**
 * A Lambda tool: `lookup_airport` answers what an IATA airport code names (airport, city,
 * country, IANA time zone) from a small built-in table. The stack deploys it from
 * examples/tools/tools.json (`target.code`), registers it and lets the step function invoke it:
 *
 *   npx cdk deploy -c toolsFile=examples/tools/tools.json -c bedrockModelId=us.anthropic.claude-sonnet-4-6
 *
 * The runtime invokes the function synchronously with `{args, context}` (lib/tools/adapters/
 * lambda.ts): `args` are the model's arguments (checked against the tool's input_schema),
 * `context` is `{run_id, operation_id, idempotency_key?, principal, attempt, timeout_ms}`. The
 * function answers with a raisin.tool-result/1 envelope (lib/contracts/tool-result.ts):
 * `succeeded` with the airport as `payload`, or `failed` with an `error_class` and a diagnostic
 * the model reads (`invalid_input` for a malformed code, `not_found` for an unknown one). Any
 * other JSON answer would be wrapped as a legacy result; a thrown error becomes `tool_error`.
 *
 * Self-contained on purpose (no imports), so the file can be copied out as a template.
 */

/** What the runtime sends. */
export interface ToolEvent {
  args: Record<string, unknown>;
  context: {
    run_id: string;
    operation_id: string;
    idempotency_key?: string;
    principal: Record<string, unknown>;
    attempt: number;
    timeout_ms: number;
  };
}

/** The part of the raisin.tool-result/1 envelope this tool uses. */
export interface ToolResult {
  envelope: 'raisin.tool-result/1';
  status: 'succeeded' | 'failed';
  payload?: unknown;
  error_class?: 'invalid_input' | 'not_found';
  diagnostics?: Array<{ code: string; severity: 'error'; message: string; path?: string }>;
  retry_policy?: { retryable: boolean };
}

export interface Airport {
  code: string;
  name: string;
  city: string;
  /** ISO 3166-1 alpha-2. */
  country: string;
  /** IANA time zone. */
  time_zone: string;
}

const AIRPORTS: Record<string, Omit<Airport, 'code'>> = {
  CDG: { name: 'Paris Charles de Gaulle Airport', city: 'Paris', country: 'FR', time_zone: 'Europe/Paris' },
  FRA: { name: 'Frankfurt Airport', city: 'Frankfurt', country: 'DE', time_zone: 'Europe/Berlin' },
  JFK: {
    name: 'John F. Kennedy International Airport',
    city: 'New York',
    country: 'US',
    time_zone: 'America/New_York',
  },
  LAX: {
    name: 'Los Angeles International Airport',
    city: 'Los Angeles',
    country: 'US',
    time_zone: 'America/Los_Angeles',
  },
  LHR: { name: 'Heathrow Airport', city: 'London', country: 'GB', time_zone: 'Europe/London' },
  NRT: { name: 'Narita International Airport', city: 'Tokyo', country: 'JP', time_zone: 'Asia/Tokyo' },
  ORD: { name: "O'Hare International Airport", city: 'Chicago', country: 'US', time_zone: 'America/Chicago' },
  SFO: {
    name: 'San Francisco International Airport',
    city: 'San Francisco',
    country: 'US',
    time_zone: 'America/Los_Angeles',
  },
  SYD: { name: 'Sydney Airport', city: 'Sydney', country: 'AU', time_zone: 'Australia/Sydney' },
};

const failed = (
  errorClass: 'invalid_input' | 'not_found',
  code: string,
  message: string,
  path?: string,
): ToolResult => ({
  envelope: 'raisin.tool-result/1',
  status: 'failed',
  error_class: errorClass,
  diagnostics: [{ code, severity: 'error', message, ...(path !== undefined ? { path } : {}) }],
  // The same code gives the same answer: asking again does not help.
  retry_policy: { retryable: false },
});

/** The Lambda handler. Never throws: every answer is an envelope. */
export async function handler(event: ToolEvent): Promise<ToolResult> {
  const code = event?.args?.code;
  if (typeof code !== 'string' || !/^[A-Za-z]{3}$/.test(code)) {
    return failed('invalid_input', 'code_invalid', 'code must be a three-letter IATA airport code', '/code');
  }
  const upper = code.toUpperCase();
  const airport = AIRPORTS[upper];
  if (airport === undefined) {
    return failed(
      'not_found',
      'airport_unknown',
      `no airport ${upper} in this tool's table (it knows ${Object.keys(AIRPORTS).join(', ')})`,
      '/code',
    );
  }
  return { envelope: 'raisin.tool-result/1', status: 'succeeded', payload: { code: upper, ...airport } };
}
