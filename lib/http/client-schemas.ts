/**
 * The wire shapes of the client-driven routes and the event stream, as the OpenAPI document
 * names them. Bodies are the contracts' own schemas (lib/contracts/client-driven.ts), named once;
 * a turn outcome is parsed by the engine with its three rules, so that its refusal carries the
 * turn-outcome-v1 reason code. Seed: agent-runs, "Server-driven and client-driven runs".
 */
import { z } from '@hono/zod-openapi';
import {
  BeginOperationInput as BeginOperationContract,
  ClientOperationResult as ClientOperationResultContract,
  CompleteRunInput as CompleteRunContract,
  FailRunInput as FailRunContract,
  FenceBody as FenceBodyContract,
  Fence as FenceContract,
  LeaseGrant as LeaseGrantContract,
  LeaseRequest as LeaseRequestContract,
  OpenRequestInput as OpenRequestContract,
  Operation as OperationContract,
  RunStatus,
} from '../contracts/index.ts';
import { RunRecord } from './schemas.ts';

const named = <T extends z.ZodType>(name: string, schema: T) => z.lazy(() => schema).openapi(name);

export const LeaseRequest = named('LeaseRequest', LeaseRequestContract);
export const LeaseGrant = named('LeaseGrant', LeaseGrantContract);
export const BeginOperationInput = named('BeginOperationInput', BeginOperationContract);
export const OpenRequestInput = named('OpenRequestInput', OpenRequestContract);
export const FenceBody = named('FenceBody', FenceBodyContract);
export const CompleteRunInput = named('CompleteRunInput', CompleteRunContract);
export const FailRunInput = named('FailRunInput', FailRunContract);
const Operation = named('Operation', OperationContract);
const ClientOperationResult = named('ClientOperationResult', ClientOperationResultContract);

/** The outcome report: a result, or an agent.external-runtime.turn-outcome.v1 document. */
export const ReportOutcomeInput = z
  .object({
    fence: named('Fence', FenceContract),
    op_id: z.string().min(1),
    result: ClientOperationResult.optional(),
    turn_outcome: z.record(z.string(), z.unknown()).optional().openapi({
      description:
        'An agent.external-runtime.turn-outcome.v1 document (schemas/turn-outcome.schema.json), checked with its three conditional rules.',
    }),
  })
  .openapi('ReportOutcomeInput');

const writeFields = {
  run: RunRecord,
  lease: LeaseGrant.nullable().openapi({ description: 'The lease still held after the write, or null.' }),
};

export const LeaseResponse = z.object({ lease: LeaseGrant, run: RunRecord }).openapi('LeaseResponse');
export const ClientWriteResponse = z.object(writeFields).openapi('ClientWriteResponse');
export const BeginOperationResponse = z
  .object({
    ...writeFields,
    operation: Operation.nullable().openapi({
      description: 'The operation in flight; null when a budget paused or failed the run instead.',
    }),
  })
  .openapi('BeginOperationResponse');
export const ReportOutcomeResponse = z
  .object({ ...writeFields, seq: z.number().int().positive() })
  .openapi('ReportOutcomeResponse');
export const OpenRequestResponse = z
  .object({ ...writeFields, request_id: z.string() })
  .openapi('OpenRequestResponse');
export const TakeSteersResponse = z
  .object({
    ...writeFields,
    steers: z.array(z.object({ steer_id: z.string(), input: z.unknown(), seq: z.number().int().positive() })),
  })
  .openapi('TakeSteersResponse');

export const LeaseView = z
  .object({
    run_id: z.string(),
    client_driven: z.boolean(),
    status: RunStatus,
    epoch: z.number().int().min(0),
    lease: LeaseGrant.nullable(),
    expires_in_ms: z.number().nullable(),
    operation: Operation.nullable(),
    queued_steers: z.number().int().min(0),
    open_requests: z.number().int().min(0),
  })
  .openapi('LeaseView');

/** `GET /runs/{id}/events/stream`: like the events query, but waiting 20 s by default. */
export const StreamQuery = z.object({
  after: z
    .string()
    .regex(/^\d{1,15}$/, 'expected a whole number')
    .default('0')
    .transform(Number)
    .openapi({
      param: {
        name: 'after',
        in: 'query',
        description: 'Events with seq > after (default 0); Last-Event-ID wins when larger.',
      },
    }),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, 'expected a whole number')
    .default('100')
    .transform(Number)
    .pipe(z.number().int().min(1).max(1000))
    .openapi({ param: { name: 'limit', in: 'query', description: '1..1000 (default 100).' } }),
  wait: z
    .string()
    .regex(/^\d{1,3}(\.\d{1,3})?$/, 'expected a number of seconds')
    .default('20')
    .transform(Number)
    .pipe(z.number().min(0).max(20))
    .openapi({
      param: {
        name: 'wait',
        in: 'query',
        description: 'Seconds (0..20, default 20) a response waits for the first event.',
      },
    }),
});
