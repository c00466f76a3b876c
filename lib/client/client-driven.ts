/**
 * The client-driven routes in the typed client: take and renew the lease, begin and report
 * operations (a result or a turn outcome), open requests, take steers, end the run, let the
 * lease go, inspect the lease. Every write sends the fence; a lost lease is ApiError
 * `fenced_out` (409). `drive` (drive.ts) builds the whole loop on these. Seed: agent-runs,
 * "Server-driven and client-driven runs".
 */
import { z } from 'zod';
import {
  type ClientOperationResult,
  type Fence,
  LeaseGrant,
  type OpenRequestInput,
  Operation,
  RunRecord,
  RunStatus,
} from '../contracts/index.ts';
import type { CallFn } from './call.ts';

const Write = z.object({ run: RunRecord, lease: LeaseGrant.nullable() });
export type ClientWrite = z.infer<typeof Write>;
const LeaseAnswer = z.object({ lease: LeaseGrant, run: RunRecord });
const Begun = Write.extend({ operation: Operation.nullable() });
const Reported = Write.extend({ seq: z.number().int().positive() });
const Opened = Write.extend({ request_id: z.string() });
const Taken = Write.extend({
  steers: z.array(z.object({ steer_id: z.string(), input: z.unknown(), seq: z.number().int() })),
});
export const LeaseView = z.object({
  run_id: z.string(),
  client_driven: z.boolean(),
  status: RunStatus,
  epoch: z.number().int(),
  lease: LeaseGrant.nullable(),
  expires_in_ms: z.number().nullable(),
  operation: Operation.nullable(),
  queued_steers: z.number().int(),
  open_requests: z.number().int(),
});
export type LeaseView = z.infer<typeof LeaseView>;

export interface ClientDrivenMethods {
  /** Takes the lease as `owner` (or renews `{owner, epoch}`); ttl in ms (default 90 000). */
  takeLease(
    runId: string,
    body: { owner: string; epoch?: number; ttl_ms?: number },
  ): Promise<z.infer<typeof LeaseAnswer>>;
  releaseLease(runId: string, fence: Fence): Promise<ClientWrite>;
  beginOperation(
    runId: string,
    body: Record<string, unknown> & { fence: Fence; kind: string },
  ): Promise<z.infer<typeof Begun>>;
  reportOutcome(
    runId: string,
    body: { fence: Fence; op_id: string } & (
      | { result: z.input<typeof ClientOperationResult> }
      | { turn_outcome: Record<string, unknown> }
    ),
  ): Promise<z.infer<typeof Reported>>;
  openRequest(
    runId: string,
    fence: Fence,
    request: OpenRequestInput['request'],
  ): Promise<z.infer<typeof Opened>>;
  takeSteers(runId: string, fence: Fence): Promise<z.infer<typeof Taken>>;
  completeRun(
    runId: string,
    fence: Fence,
    body?: { outcome?: 'succeeded' | 'partial' | 'blocked'; summary?: string },
  ): Promise<ClientWrite>;
  failRun(runId: string, fence: Fence, code: string): Promise<ClientWrite>;
  /** Who holds the lease of a run, at which epoch, until when (`agent-runs lease RUN`). */
  lease(runId: string): Promise<LeaseView>;
}

const path = (runId: string, rest: string) => `/runs/${encodeURIComponent(runId)}${rest}`;

export function clientDrivenMethods(call: CallFn): ClientDrivenMethods {
  const post = <T extends z.ZodType>(runId: string, rest: string, json: unknown, schema: T) =>
    call({ method: 'POST', path: path(runId, rest), json, schema });
  return {
    takeLease: (runId, body) => post(runId, '/lease', body, LeaseAnswer),
    releaseLease: (runId, fence) => post(runId, '/lease/release', { fence }, Write),
    beginOperation: (runId, body) => post(runId, '/operations', body, Begun),
    reportOutcome: (runId, body) => post(runId, '/operations/outcome', body, Reported),
    openRequest: (runId, fence, request) => post(runId, '/requests', { fence, request }, Opened),
    takeSteers: (runId, fence) => post(runId, '/steers/take', { fence }, Taken),
    completeRun: (runId, fence, body = {}) => post(runId, '/complete', { fence, ...body }, Write),
    failRun: (runId, fence, code) => post(runId, '/fail', { fence, code }, Write),
    lease: (runId) => call({ method: 'GET', path: path(runId, '/lease'), schema: LeaseView }),
  };
}
