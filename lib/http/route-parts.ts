/**
 * The parts every route definition of routes.ts shares: the operation tags, the error
 * responses each status may carry (their descriptions name the stable codes, from the catalogue
 * lib/contracts/error-codes.ts), the 429s of the
 * creating and waiting routes, and the operationId helper.
 */
import { z } from '@hono/zod-openapi';
import { ERROR_CODES, type ErrorCode } from '../contracts/error-codes.ts';
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

/** The codes answered with `status`, in catalogue order, as `code: meaning; code: meaning`. */
export function describeStatus(status: number): string {
  return describeCodes(
    (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].status === status),
  );
}

/** `code: meaning; code: meaning` for the given codes (lib/contracts/error-codes.ts). */
function describeCodes(codes: readonly ErrorCode[]): string {
  return codes.map((code) => `${code}: ${ERROR_CODES[code].meaning}`).join('; ');
}

/** The 429 every route may answer: the stage's throttling, not the API's error body. */
const STAGE_THROTTLED =
  'throttled by the API Gateway stage (AWS only; body `{"message": "Too Many Requests"}`)';

/**
 * The description of each error status of the document, derived from the catalogue (429 is the
 * stage's: the API's own 429s are CREATE_429 and WAIT_429).
 */
export const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = Object.fromEntries(
  [...new Set(Object.values(ERROR_CODES).map((entry) => entry.status))].map((status) => [
    status,
    status === 429 ? STAGE_THROTTLED : describeStatus(status),
  ]),
);

/** API Gateway's own throttling answer (not the API's error body). */
const ThrottledBody = z.object({ message: z.string() }).openapi('Throttled');

/** Error responses of a route: 429 (the stage throttles every route), the shared ones, plus `extra`. */
export function errors(...extra: number[]) {
  const statuses = [401, 500, 503, ...extra].sort((a, b) => a - b);
  return {
    ...Object.fromEntries(
      statuses.map((s) => [s, { description: ERROR_DESCRIPTIONS[s] ?? 'error', content: json(ErrorBody) }]),
    ),
    429: { description: STAGE_THROTTLED, content: json(ThrottledBody) },
  };
}

/** The 429 of `POST /runs` and `POST /runs/{id}/fork`: the stage's throttling, or the API's own quota_exceeded (with Retry-After for the rate limit). */
export const CREATE_429 = {
  description: `${describeCodes(['quota_exceeded'])}; or ${STAGE_THROTTLED}`,
  headers: {
    'Retry-After': { description: 'Seconds until the window ends.', schema: { type: 'integer' as const } },
  },
  content: json(z.union([ErrorBody, ThrottledBody])),
};

/** The 429 of the waiting reads (long poll, event stream): the caller's open waits, or the stage's throttling. */
export const WAIT_429 = {
  description: `${describeCodes(['too_many_waits'])}; or ${STAGE_THROTTLED}`,
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
  429: { description: STAGE_THROTTLED, content: json(ThrottledBody) },
  500: { description: ERROR_DESCRIPTIONS[500] ?? 'internal', content: json(ErrorBody) },
};

/** The `operationId` (a stable method name for generated clients) and tag of a route. */
export const op = (operationId: string, tag: Tag) => ({ operationId, tags: [tag] });
