/**
 * The parts every route definition of routes.ts shares: the operation tags, the error
 * responses each status may carry (their descriptions name the stable codes), the 429s of the
 * creating and waiting routes, and the operationId helper.
 */
import { z } from '@hono/zod-openapi';
import { ErrorBody } from './schemas.ts';

export const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });

/**
 * The operation tags, in document order: code generators group methods by them (one client
 * class per tag). `openApiDocument` lists them with these descriptions.
 */
export const TAGS = {
  runs: 'Create, read, list and fork runs; read their events, checkpoints, domain state and children.',
  controls: 'Stop, pause, resume, steer, approve and answer a run (one control per call).',
  results: 'Deliver external results to operations that wait on a resume key.',
  clients:
    'Drive a client-driven run (one created without a reducer): its lease, the operations the client executes, requests, steers and ending. Every write carries the fence {owner, epoch}; a lost lease is 409 fenced_out.',
  tools: 'The registered tools (metadata only).',
  functions: 'Reducer artifacts (admin).',
  registries: 'Tools, the tool policy and agents as data: versioned, published versions immutable (admin).',
  meta: 'Liveness and this document (no authentication).',
} as const;
export type Tag = keyof typeof TAGS;

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'validation_failed, invalid_json, invalid_unicode or invalid_artifact',
  401: 'unauthenticated',
  403: "unauthorized (e.g. on_behalf_of by a non-system caller, a registry route without admin rights), capability_invalid (a caller who may see the run presented a wrong X-Control-Capability), agent_not_allowed (the same answer for an agent that is not registered and one that may not act for the caller), workspace_not_granted (the subject's workspace is not granted to the caller; nothing of its runs is revealed) or reserved_path (a function path under /lib/raisin/ or /lib/models/: read-only for every caller, admins included)",
  404: 'run_not_found (also for a run the caller may not see), checkpoint_not_found, state_not_found, resume_key_not_found, registry_entry_not_found, function_not_found or not_found',
  405: 'method_not_allowed',
  409: "run_terminal, subject_busy (the subject has a live run the caller may not see), create_key_reused (the key was used for another request), builtin_readonly, subject_taken (a fork subject with a live run), checkpoint_not_forkable, version_immutable (a published registry version never changes), tool_name_reserved, fenced_out, lease_held, not_client_driven, invalid_state, turn_outcome_refused, result_already_delivered (another delivery was applied to the resume key) or result_already_held (another result is held for it), cursor_ahead (an events cursor beyond the run's last seq)",
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'throttled by the API Gateway stage (AWS only; body `{"message": "Too Many Requests"}`)',
  422: 'reducer_not_found',
  500: 'internal',
  503: 'store_unavailable (see Retry-After)',
};

/** API Gateway's own throttling answer (not the API's error body). */
const ThrottledBody = z.object({ message: z.string() }).openapi('Throttled');

/** Error responses of a route: 429 (the stage throttles every route), the shared ones, plus `extra`. */
export function errors(...extra: number[]) {
  const statuses = [401, 500, 503, ...extra].sort((a, b) => a - b);
  return {
    ...Object.fromEntries(
      statuses.map((s) => [s, { description: ERROR_DESCRIPTIONS[s] ?? 'error', content: json(ErrorBody) }]),
    ),
    429: { description: ERROR_DESCRIPTIONS[429] ?? 'throttled', content: json(ThrottledBody) },
  };
}

/** The 429 of `POST /runs` and `POST /runs/{id}/fork`: the stage's throttling, or the API's own quota_exceeded (with Retry-After for the rate limit). */
export const CREATE_429 = {
  description:
    'quota_exceeded (details.limit max_live_runs or max_creates_per_minute; Retry-After for the rate limit), or throttled by the API Gateway stage',
  headers: {
    'Retry-After': { description: 'Seconds until the window ends.', schema: { type: 'integer' as const } },
  },
  content: json(z.union([ErrorBody, ThrottledBody])),
};

/** The 429 of the waiting reads (long poll, event stream): the caller's open waits, or the stage's throttling. */
export const WAIT_429 = {
  description:
    'too_many_waits (the caller holds as many open long polls and event streams as it may, counted per process; Retry-After), or throttled by the API Gateway stage',
  headers: {
    'Retry-After': {
      description: "Seconds until the earliest of the caller's open waits ends (at least 1).",
      schema: { type: 'integer' as const },
    },
  },
  content: json(z.union([ErrorBody, ThrottledBody])),
};

/** What a public route can answer besides success: throttling (AWS) and an internal error. */
export const PUBLIC_ERRORS = {
  429: { description: ERROR_DESCRIPTIONS[429] ?? 'throttled', content: json(ThrottledBody) },
  500: { description: ERROR_DESCRIPTIONS[500] ?? 'internal', content: json(ErrorBody) },
};

/** The `operationId` (a stable method name for generated clients) and tag of a route. */
export const op = (operationId: string, tag: Tag) => ({ operationId, tags: [tag] });
