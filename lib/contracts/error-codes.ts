/**
 * The one catalogue of the API's error codes: for each stable `code` of an error body
 * `{code, message, details}`, the HTTP status it is answered with, what it means, what the caller
 * should do, and whether the engine raises it (`engine`) or only the HTTP layer (`http`). The
 * engine's `EngineErrorCode`, the HTTP status map (`HTTP_ERROR_STATUS`), the OpenAPI error
 * descriptions and docs/reference/errors.md (`node bin/write-error-docs.ts`) are all derived
 * from it: a code is added here, nowhere else. docs/architecture.md, "Conventions".
 */

/** One code of the catalogue. */
export interface ErrorCodeEntry {
  /** The HTTP status the API answers it with. */
  readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 503;
  /** `engine`: an EngineError may carry it (the HTTP layer may raise it too); `http`: only the HTTP layer. */
  readonly source: 'engine' | 'http';
  /** What happened, in one sentence (the OpenAPI response descriptions quote it). */
  readonly meaning: string;
  /** What the caller should do about it. */
  readonly action: string;
}

export const ERROR_CODES = {
  validation_failed: {
    status: 400,
    source: 'engine',
    meaning:
      'the body, a query parameter or a path parameter does not match the route schema (details.target, details.issues)',
    action: 'fix the field details.issues names; resending the same request fails again',
  },
  invalid_json: {
    status: 400,
    source: 'http',
    meaning: 'the body is not JSON',
    action: 'send a JSON body with Content-Type application/json',
  },
  invalid_unicode: {
    status: 400,
    source: 'http',
    meaning:
      'a JSON body that is not valid UTF-8, or a string in the body, path or query with a lone UTF-16 surrogate (or invalid UTF-8 percent-encoding)',
    action: 'send well-formed UTF-8 text',
  },
  invalid_artifact: {
    status: 400,
    source: 'http',
    meaning: 'a function artifact is not registrable (empty bytes, a bad path, an inadmissible module)',
    action: 'fix the artifact or its path and register it again',
  },
  unauthenticated: {
    status: 401,
    source: 'http',
    meaning: 'no credentials, or credentials that do not authenticate',
    action:
      'send a valid Authorization: Bearer token; on the local stack `npx agent-runs token --sub NAME` prints one',
  },
  unauthorized: {
    status: 403,
    source: 'engine',
    meaning:
      'authenticated but not allowed (not the run principal, not an admin, on_behalf_of by a non-system caller)',
    action: 'act as a principal that may, or ask an admin',
  },
  capability_invalid: {
    status: 403,
    source: 'engine',
    meaning: 'a caller who may see the run presented an X-Control-Capability that does not match',
    action: 'send the control_capability the create answered with, or none',
  },
  agent_not_allowed: {
    status: 403,
    source: 'engine',
    meaning:
      'as_agent names an agent that is not registered or that may not act for the caller (one answer for both)',
    action: 'register the agent, or grant it the user it acts for',
  },
  reserved_path: {
    status: 403,
    source: 'http',
    meaning:
      'a write to a reserved system path (a function path starting with /lib/raisin or /lib/models), refused to every caller, admins included',
    action: 'register the function under another path',
  },
  workspace_not_granted: {
    status: 403,
    source: 'engine',
    meaning:
      "the subject workspace is not the caller's own (user:{sub}) nor granted to it; the same answer whether or not a run lives there",
    action: 'use your own workspace user:{sub} or one an admin granted you (POST /admin/workspaces)',
  },
  run_not_found: {
    status: 404,
    source: 'engine',
    meaning: 'no such run, or one the caller may not see (the same answer: nothing is revealed)',
    action: 'check the run id and the principal',
  },
  seq_not_found: {
    status: 404,
    source: 'engine',
    meaning:
      'the run has no event of that seq (GET /runs/{id}/at/{seq}: seq runs from 1 to the run last_seq)',
    action: 'read the run last_seq and ask for a seq within it',
  },
  checkpoint_not_found: {
    status: 404,
    source: 'engine',
    meaning: 'the run has no checkpoint of that number',
    action: 'list the run checkpoints and pick one of them',
  },
  registry_entry_not_found: {
    status: 404,
    source: 'engine',
    meaning: 'no registry entry (tool, policy, agent) with that name or version',
    action: 'publish it first, or check the name and version',
  },
  resume_key_not_found: {
    status: 404,
    source: 'engine',
    meaning: 'no operation waits on the resume key and none did',
    action: 'check the resume key the run event named',
  },
  state_not_found: {
    status: 404,
    source: 'engine',
    meaning: 'the run holds no stored domain state of that revision (or none it references)',
    action: 'read a revision the run events name',
  },
  function_not_found: {
    status: 404,
    source: 'http',
    meaning: 'no function artifact is registered at that path (GET /functions/{path})',
    action: 'register the artifact first (PUT /functions/{path}), or check the path',
  },
  not_found: {
    status: 404,
    source: 'http',
    meaning: 'no route has this path',
    action: 'check the path against GET /openapi.json',
  },
  method_not_allowed: {
    status: 405,
    source: 'http',
    meaning: 'a route has this path, but not with this method (see the Allow header)',
    action: 'use a method the Allow header lists',
  },
  artifact_hash_mismatch: {
    status: 409,
    source: 'http',
    meaning:
      'the artifact published at the function path has another sha256 than the one given (details.hash is its own)',
    action: 'check the hash you meant, or pass the published one (details.hash) after reviewing it',
  },
  subject_busy: {
    status: 409,
    source: 'engine',
    meaning: 'the subject has a live run the caller may not see; nothing of it is revealed',
    action: 'use another subject, or wait until that run ends',
  },
  create_key_reused: {
    status: 409,
    source: 'engine',
    meaning: 'the create key was already used for a different request',
    action: 'use a fresh create_key for a different request',
  },
  resume_key_in_use: {
    status: 409,
    source: 'engine',
    meaning:
      "another principal's run waits on the resume key, or used it within the last 7 days; a key belongs to the principal whose run first waits on it",
    action: 'wait on another key: make resume keys unguessable (include a random or run-specific part)',
  },
  result_already_delivered: {
    status: 409,
    source: 'engine',
    meaning: 'another delivery (another delivery_id) was already applied to the resume key',
    action: 'nothing: the operation has its result; resend only with the original delivery_id',
  },
  delivery_id_reused: {
    status: 409,
    source: 'engine',
    meaning:
      'the delivery_id was already used on the resume key with another body (as control_id_reused is for controls)',
    action: 'resend the original body under that delivery_id, or send a new result under a new delivery_id',
  },
  result_already_held: {
    status: 409,
    source: 'engine',
    meaning: 'another result is held for the resume key until its wait is recorded',
    action: 'nothing: the held result is applied once the wait is recorded',
  },
  run_terminal: {
    status: 409,
    source: 'engine',
    meaning: 'the run ended: it takes no more results or writes',
    action: 'read the run outcome; fork it from a checkpoint to go on',
  },
  version_immutable: {
    status: 409,
    source: 'engine',
    meaning: 'a published tool, policy or agent version never changes',
    action: 'publish the changed document as a new version',
  },
  tool_name_reserved: {
    status: 409,
    source: 'engine',
    meaning: 'a tool published as data may not take the name of a tool registered in code',
    action: 'publish the tool under another name',
  },
  fenced_out: {
    status: 409,
    source: 'engine',
    meaning:
      'a client-driven write whose fence no longer holds: the lease was lost (expiry, takeover, stop, pause)',
    action: 'stop writing; take the lease again to go on',
  },
  lease_held: {
    status: 409,
    source: 'engine',
    meaning: 'another client holds the run lease until details.expires_at',
    action: 'wait until details.expires_at, then take the lease',
  },
  not_client_driven: {
    status: 409,
    source: 'engine',
    meaning: 'a client-driven route on a server-driven run (one with a reducer)',
    action: 'use the controls routes: the server drives this run',
  },
  invalid_state: {
    status: 409,
    source: 'engine',
    meaning: 'the run state does not allow this write now (details.reason)',
    action: 'read the run and act on what details.reason names',
  },
  turn_outcome_refused: {
    status: 409,
    source: 'engine',
    meaning: 'the runtime refused a turn outcome (details.reason_code, a turn-outcome-v1 reason code)',
    action: 'act on details.reason_code; do not resend the same outcome',
  },
  builtin_readonly: {
    status: 409,
    source: 'http',
    meaning: 'the function path names a built-in artifact, which cannot be replaced',
    action: 'register the function under another path',
  },
  subject_taken: {
    status: 409,
    source: 'engine',
    meaning: 'a fork subject has a live run (the original one, while it lives)',
    action: 'give the fork another subject',
  },
  cursor_ahead: {
    status: 409,
    source: 'engine',
    meaning:
      'an events cursor (after, Last-Event-ID) beyond the run last seq: no such event exists yet (details.after, details.last_seq)',
    action: 'resume from details.last_seq or below',
  },
  checkpoint_not_forkable: {
    status: 409,
    source: 'engine',
    meaning: 'the checkpoint cannot be forked from (it waits on external results, or its run had ended)',
    action: 'fork from another checkpoint',
  },
  payload_too_large: {
    status: 413,
    source: 'engine',
    meaning: 'a body, or what it would store, exceeds a size limit (details.limit_bytes when known)',
    action: 'send less: smaller input, or large payloads by reference',
  },
  unsupported_media_type: {
    status: 415,
    source: 'http',
    meaning: 'the Content-Type is not one the route accepts',
    action: 'send a Content-Type the route documents',
  },
  reducer_not_found: {
    status: 422,
    source: 'engine',
    meaning: 'the create request names a reducer function that is not registered',
    action: 'register the function (PUT /functions/{path}) or fix the path',
  },
  quota_exceeded: {
    status: 429,
    source: 'engine',
    meaning:
      'a per-principal limit (details.limit: max_live_runs, max_creates_per_minute) is reached; Retry-After for the rate limit',
    action: 'retry after Retry-After seconds; for max_live_runs, end a live run first',
  },
  too_many_waits: {
    status: 429,
    source: 'http',
    meaning: 'the caller holds as many open long polls and event streams as it may (per process)',
    action: 'retry after Retry-After seconds, or close a wait',
  },
  too_many_connections: {
    status: 429,
    source: 'http',
    meaning:
      'the caller holds as many open live sockets as it may (AGENT_RUNS_LIVE_MAX_CONNECTIONS): the WebSocket upgrade is refused',
    action: 'close a live socket, or follow several runs over one socket',
  },
  too_many_subscriptions: {
    status: 429,
    source: 'http',
    meaning:
      'a live socket is subscribed to as many runs as it may (AGENT_RUNS_LIVE_MAX_SUBSCRIPTIONS): an `error` message on the socket',
    action: 'unsubscribe from a run first; a subscribe to a run already subscribed replaces it',
  },
  subscribe_rate_exceeded: {
    status: 429,
    source: 'http',
    meaning:
      'a live socket sent as many subscribe messages this minute as it may (AGENT_RUNS_LIVE_SUBSCRIBES_PER_MINUTE): an `error` message on the socket',
    action: 'subscribe again in the next minute (details: none; the socket stays open)',
  },
  replay_budget_exceeded: {
    status: 429,
    source: 'http',
    meaning:
      "a principal's live subscribes replayed as many catch-up bytes this window as they may (AGENT_RUNS_LIVE_REPLAY_BYTES per AGENT_RUNS_LIVE_REPLAY_WINDOW_MS): an `error` message on the socket, after the events already sent; the subscription is not held",
    action:
      'subscribe again from the last seq held after `retry_after_ms` (details: `retry_after_ms` on the message; the socket stays open; followLive does this)',
  },
  internal: {
    status: 500,
    source: 'http',
    meaning: 'an unexpected error; its message and stack are logged, never answered',
    action: 'report it with the time and route; retrying may not help',
  },
  store_unavailable: {
    status: 503,
    source: 'engine',
    meaning: 'DynamoDB, S3 or SQS could not be reached or throttled the request, or the run stayed busy',
    action:
      'resend the same request after Retry-After seconds (writes are idempotent by their ids: control_id, delivery_id, create_key)',
  },
} as const satisfies Record<string, ErrorCodeEntry>;

/** Every code the API answers with. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes an EngineError carries (source `engine`). */
export type EngineErrorCode = {
  [K in ErrorCode]: (typeof ERROR_CODES)[K]['source'] extends 'engine' ? K : never;
}[ErrorCode];

/** The status of each code, e.g. `{ run_not_found: 404, ... }`. */
export type ErrorStatusMap = { readonly [K in ErrorCode]: (typeof ERROR_CODES)[K]['status'] };

/** Whether a string is one of the catalogue's codes. */
export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CODES, value);
}
