/**
 * The wire shapes of the client-driven routes and the event stream, as the OpenAPI document
 * names them. Bodies and answers are the contracts' own schemas (lib/contracts/client-driven.ts,
 * http-api.ts), named once;
 * a turn outcome is parsed by the engine with its three rules, so that its refusal carries the
 * turn outcome's reason code. docs/contracts/run-lifecycle.md, "Server-driven and client-driven
 * runs"; docs/contracts/turn-outcome.md.
 */
import { z } from '@hono/zod-openapi';
import {
  BeginOperationInput as BeginOperationContract,
  BeginOperationResponse as BeginOperationResponseContract,
  ClientOperationResult as ClientOperationResultContract,
  ClientWriteResponse as ClientWriteResponseContract,
  CompleteRunInput as CompleteRunContract,
  FailRunInput as FailRunContract,
  FenceBody as FenceBodyContract,
  Fence as FenceContract,
  LeaseGrant as LeaseGrantContract,
  LeaseRequest as LeaseRequestContract,
  LeaseResponse as LeaseResponseContract,
  LeaseView as LeaseViewContract,
  OpenRequestInput as OpenRequestContract,
  OpenRequestResponse as OpenRequestResponseContract,
  Operation as OperationContract,
  ReportOutcomeInput as ReportOutcomeContract,
  ReportOutcomeResponse as ReportOutcomeResponseContract,
  TakeSteersResponse as TakeSteersResponseContract,
} from '../contracts/index.ts';
import { named } from './schemas.ts';

export const LeaseRequest = named('LeaseRequest', LeaseRequestContract);
export const LeaseGrant = named('LeaseGrant', LeaseGrantContract);
export const BeginOperationInput = named('BeginOperationInput', BeginOperationContract);
export const OpenRequestInput = named('OpenRequestInput', OpenRequestContract);
export const FenceBody = named('FenceBody', FenceBodyContract);
export const CompleteRunInput = named('CompleteRunInput', CompleteRunContract);
export const FailRunInput = named('FailRunInput', FailRunContract);
named('Fence', FenceContract);
named('Operation', OperationContract);
const ClientOperationResult = named('ClientOperationResult', ClientOperationResultContract);

/**
 * The outcome report as the document shows it: the contract's fields, `result` and
 * `turn_outcome` described (the engine parses the body with the contract, so that a refused
 * turn outcome keeps its reason code).
 */
export const ReportOutcomeInput = z
  .object({
    ...ReportOutcomeContract.shape,
    result: ClientOperationResult.optional(),
    turn_outcome: z.record(z.string(), z.unknown()).optional().openapi({
      description:
        'An agent.external-runtime.turn-outcome.v1 document (schemas/turn-outcome.schema.json), checked with its three conditional rules.',
    }),
  })
  .openapi('ReportOutcomeInput');

export const LeaseResponse = named('LeaseResponse', LeaseResponseContract);
export const ClientWriteResponse = named('ClientWriteResponse', ClientWriteResponseContract);
export const BeginOperationResponse = named('BeginOperationResponse', BeginOperationResponseContract);
export const ReportOutcomeResponse = named('ReportOutcomeResponse', ReportOutcomeResponseContract);
export const OpenRequestResponse = named('OpenRequestResponse', OpenRequestResponseContract);
export const TakeSteersResponse = named('TakeSteersResponse', TakeSteersResponseContract);
export const LeaseView = named('LeaseView', LeaseViewContract);
