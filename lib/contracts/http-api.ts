/**
 * The HTTP API's answers: the envelopes around the other contracts (pages, lists, the create
 * and delivery answers, the client-driven write answers, the error body). Defined once here:
 * the HTTP layer (lib/http) names them in its OpenAPI document and the client (lib/client)
 * parses every answer with the very same schema, so the document and the client cannot drift.
 * A run record or checkpoint in an answer is the public one (public-run.ts: no storage key).
 * Plain zod, browser-safe.
 */
import { z } from 'zod';
import { LeaseGrant, TakenSteer } from './client-driven.ts';
import { RunEvent } from './events.ts';
import { PublicCheckpoint, PublicRunRecord } from './public-run.ts';
import { Operation, RunStatus } from './run.ts';
import { Timings } from './timings.ts';
import { ToolDescriptor } from './tool-registration.ts';

/** `{code, message, details}`: every error answer of the API (codes: error-codes.ts). */
export const ErrorBody = z.object({
  code: z.string().describe('A stable code (lib/contracts/error-codes.ts).'),
  message: z.string(),
  details: z.record(z.string(), z.unknown()),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** `GET /health`. */
export const Health = z.object({ status: z.literal('ok') });
export type Health = z.infer<typeof Health>;

/** `GET /openapi.json`: the OpenAPI 3.1 document (any JSON object). */
export const OpenApiDocument = z.record(z.string(), z.unknown());
export type OpenApiDocument = z.infer<typeof OpenApiDocument>;

/**
 * The answer to `POST /runs` and `POST /runs/{id}/fork`: the run as created, `created` (false
 * for a `create_key` replay or a subject's live run), and `control_capability`, returned once
 * when the run is created (sent back as `X-Control-Capability`).
 */
export const CreateRunResponse = z.object({
  run: PublicRunRecord,
  created: z.boolean(),
  control_capability: z.string().optional(),
});
export type CreateRunResponse = z.infer<typeof CreateRunResponse>;

/** `GET /runs`: a page of runs the caller may read, newest first; `cursor` (opaque) absent on the last page. */
export const RunList = z.object({ runs: z.array(PublicRunRecord), cursor: z.string().optional() });
export type RunList = z.infer<typeof RunList>;

/**
 * `GET /runs/{id}/events`: events in seq order (seq > the `after` asked for). `status` and
 * `last_seq` are the run's as read BEFORE the events, so a follower that sees `settled` with
 * `next_after >= last_seq` has every event.
 */
export const EventPage = z.object({
  events: z.array(RunEvent),
  next_after: z
    .number()
    .int()
    .min(0)
    .describe('Pass as `after` for the next page: the last event seq, or the `after` asked for.'),
  last_seq: z.number().int().min(0),
  status: RunStatus,
  settled: z
    .boolean()
    .describe(
      'True when the run has ended and its reducer has received every event (its last answer, after the terminal event, is in the log): no event will follow `last_seq`.',
    ),
});
export type EventPage = z.infer<typeof EventPage>;

/** `GET /runs/{id}/checkpoints`: the run's checkpoints, oldest first. */
export const CheckpointList = z.object({ checkpoints: z.array(PublicCheckpoint) });
export type CheckpointList = z.infer<typeof CheckpointList>;

/** A child run as its parent's listing shows it; `created_at` in ms since the epoch. */
export const ChildRun = z.object({
  run_id: z.string(),
  status: RunStatus,
  depth: z.number().int().nonnegative(),
  parent_op_id: z.string().optional(),
  created_at: z.number(),
});
export type ChildRun = z.infer<typeof ChildRun>;

/** `GET /runs/{id}/children`: the child runs a run delegated to, oldest first. */
export const ChildRunList = z.object({ children: z.array(ChildRun) });
export type ChildRunList = z.infer<typeof ChildRunList>;

/**
 * `GET /runs/{id}/state`: one domain state revision of a run (write-once: the same revision
 * always reads the same). Where it is stored is not part of the answer.
 */
export const StateRevision = z.object({
  run_id: z.string(),
  state_rev: z.number().int().min(0),
  state: z.unknown(),
  state_digest: z.string().describe('sha256 hex of the canonical JSON (RFC 8785) of state'),
});
export type StateRevision = z.infer<typeof StateRevision>;

/**
 * `POST /results/{resume_key}`, 200: applied (the seq of the tool_result), or duplicate (the
 * delivery_id was applied: original_seq; or is still held: held, until expires_at, ms epoch).
 */
export const DeliveryResponse = z
  .union([
    z.object({ ack: z.literal('applied'), run_id: z.string(), seq: z.number().int().positive() }),
    z.object({ ack: z.literal('duplicate'), original_seq: z.number().int().positive() }),
    z.object({ ack: z.literal('duplicate'), held: z.literal(true), expires_at: z.number().int() }),
  ])
  .describe(
    'applied: the seq of the tool_result; duplicate: a delivery_id already applied (original_seq) or still held (held).',
  );
export type DeliveryResponse = z.infer<typeof DeliveryResponse>;

/**
 * `POST /results/{resume_key}`, 202: no wait on the key is recorded yet; the result is held by
 * its resume_key until `expires_at` (ms epoch) and applied once when the wait is recorded.
 */
export const HeldDeliveryResponse = z
  .object({ ack: z.literal('held'), resume_key: z.string(), expires_at: z.number().int() })
  .describe(
    'No wait on the key is recorded yet: the result is held by its resume_key until expires_at (ms epoch) and applied once when the wait is recorded.',
  );
export type HeldDeliveryResponse = z.infer<typeof HeldDeliveryResponse>;

/** `GET /v1/tools`: the registered tools, metadata only. */
export const ToolList = z.object({ tools: z.array(ToolDescriptor) });
export type ToolList = z.infer<typeof ToolList>;

/** `GET /config`: the deployment's settings a client needs to explain a run: its timings (ms each). */
export const DeploymentConfig = z.object({
  timings: Timings,
});
export type DeploymentConfig = z.infer<typeof DeploymentConfig>;

/** `PUT /functions/{path}`: a registered artifact: its path, kind, content hash and size in bytes. */
export const FunctionArtifact = z.object({
  function_path: z.string(),
  kind: z.enum(['js', 'wasm', 'star']),
  hash: z.string().describe('sha256 hex of the bytes; runs pin it when they bind it'),
  size: z.number().int().positive(),
});
export type FunctionArtifact = z.infer<typeof FunctionArtifact>;

/** `GET /functions/{path}` (admin only): a registered artifact with its bytes, base64 (sha256 of the bytes = hash). */
export const FunctionArtifactSource = FunctionArtifact.extend({
  bytes_base64: z.string().describe('The artifact bytes, base64 (sha256 of the bytes = hash)'),
});
export type FunctionArtifactSource = z.infer<typeof FunctionArtifactSource>;

// ---------------------------------------------------------------- client-driven answers

const writeFields = {
  run: PublicRunRecord,
  lease: LeaseGrant.nullable().describe('The lease still held after the write, or null.'),
};

/** `POST /runs/{id}/lease`: the lease taken or renewed, and the run. */
export const LeaseResponse = z.object({ lease: LeaseGrant, run: PublicRunRecord });
export type LeaseResponse = z.infer<typeof LeaseResponse>;

/** What every client-driven write answers: the run after the write and the lease (null once let go or the run ended). */
export const ClientWriteResponse = z.object(writeFields);
export type ClientWriteResponse = z.infer<typeof ClientWriteResponse>;

/** `POST /runs/{id}/operations`: the operation in flight, or null when a budget paused or failed the run instead. */
export const BeginOperationResponse = z.object({
  ...writeFields,
  operation: Operation.nullable().describe(
    'The operation in flight; null when a budget paused or failed the run instead.',
  ),
});
export type BeginOperationResponse = z.infer<typeof BeginOperationResponse>;

/** `POST /runs/{id}/operations/outcome`: the seq of the event recorded. */
export const ReportOutcomeResponse = z.object({ ...writeFields, seq: z.number().int().positive() });
export type ReportOutcomeResponse = z.infer<typeof ReportOutcomeResponse>;

/** `POST /runs/{id}/requests`: the request opened. */
export const OpenRequestResponse = z.object({ ...writeFields, request_id: z.string() });
export type OpenRequestResponse = z.infer<typeof OpenRequestResponse>;

/** `POST /runs/{id}/steers/take`: the steers taken, oldest first. */
export const TakeSteersResponse = z.object({ ...writeFields, steers: z.array(TakenSteer) });
export type TakeSteersResponse = z.infer<typeof TakeSteersResponse>;

/**
 * `GET /runs/{id}/lease`: whether the run is client-driven, its status and epoch, the lease or
 * null, `expires_in_ms` (null without a lease), the operation in flight, and how many steers
 * are queued and requests open.
 */
export const LeaseView = z.object({
  run_id: z.string(),
  client_driven: z.boolean(),
  status: RunStatus,
  epoch: z.number().int().min(0),
  lease: LeaseGrant.nullable(),
  expires_in_ms: z.number().nullable(),
  operation: Operation.nullable(),
  queued_steers: z.number().int().min(0),
  open_requests: z.number().int().min(0),
});
export type LeaseView = z.infer<typeof LeaseView>;
