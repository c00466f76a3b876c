/**
 * The HTTP API's own wire shapes: the capability header and the result body. Every body and
 * answer is a contract's schema (lib/contracts; the answers' envelopes in http-api.ts), the very
 * object the client parses with, named here once so that the document refers to it ($ref)
 * instead of repeating it; so are the path and query parameters (lib/contracts/http-params.ts).
 */
import { zodToOpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '@hono/zod-openapi';
import {
  AgentEntry as AgentEntryContract,
  CheckpointList as CheckpointListContract,
  ChildRun as ChildRunContract,
  ChildRunList as ChildRunListContract,
  ControlAck as ControlAckContract,
  Control as ControlContract,
  CreateRunInput as CreateRunInputContract,
  CreateRunResponse as CreateRunResponseContract,
  DeliveryResponse as DeliveryResponseContract,
  DeploymentConfig as DeploymentConfigContract,
  ErrorBody as ErrorBodyContract,
  EventPage as EventPageContract,
  ForkRunInput as ForkRunInputContract,
  FunctionArtifact as FunctionArtifactContract,
  FunctionArtifactSource as FunctionArtifactSourceContract,
  Health as HealthContract,
  HeldDeliveryResponse as HeldDeliveryResponseContract,
  OpenApiDocument,
  PolicyDocument as PolicyDocumentContract,
  PublicCheckpoint,
  PublicRunRecord,
  PublishResult as PublishResultContract,
  RegistryEntry as RegistryEntryContract,
  RegistryEntryView as RegistryEntryViewContract,
  RegistryListing as RegistryListingContract,
  RunAtSeq as RunAtSeqContract,
  RunEvent as RunEventContract,
  RunList as RunListContract,
  StateRevision as StateRevisionContract,
  ToolDescriptor as ToolDescriptorContract,
  ToolEntry as ToolEntryContract,
  ToolList as ToolListContract,
  WorkspaceGrant as WorkspaceGrantContract,
} from '../contracts/index.ts';
import { Timings as TimingsContract } from '../contracts/timings.ts';
import { HTTP_ERROR_STATUS } from './errors.ts';

/**
 * Names `schema` in the OpenAPI document (components/schemas/`name`, referred to by $ref
 * wherever it appears, nested too) and returns the same object: the route validates with, and
 * the client parses with, the contract's own schema. The name is kept beside the schema in the
 * generator's registry (`.openapi(name)` would return a copy, another object).
 */
export function named<T extends z.ZodType>(name: string, schema: T): T {
  const meta = zodToOpenAPIRegistry.get(schema);
  zodToOpenAPIRegistry.add(schema, { ...meta, _internal: { ...meta?._internal, refId: name } });
  return schema;
}

export const RunRecord = named('RunRecord', PublicRunRecord);
export const RunEvent = named('RunEvent', RunEventContract);
export const Control = named('Control', ControlContract);
export const ControlAck = named('ControlAck', ControlAckContract);
export const ToolDescriptor = named('ToolDescriptor', ToolDescriptorContract);
export const CreateRunInput = named('CreateRunInput', CreateRunInputContract);
export const ForkRunInput = named('ForkRunInput', ForkRunInputContract);
export const ToolEntry = named('ToolEntry', ToolEntryContract);
export const PolicyDocument = named('PolicyDocument', PolicyDocumentContract);
export const AgentEntry = named('AgentEntry', AgentEntryContract);
export const WorkspaceGrant = named('WorkspaceGrant', WorkspaceGrantContract);
export const PublishResult = named('PublishResult', PublishResultContract);
export const RegistryEntry = named('RegistryEntry', RegistryEntryContract);
export const RegistryListing = named('RegistryListing', RegistryListingContract);
/** One published version and every version of its name, oldest first. */
export const RegistryEntryView = named('RegistryEntryView', RegistryEntryViewContract);
export const CreateRunResponse = named('CreateRunResponse', CreateRunResponseContract);
export const RunList = named('RunList', RunListContract);
export const EventPage = named('EventPage', EventPageContract);
export const Checkpoint = named('Checkpoint', PublicCheckpoint);
export const CheckpointList = named('CheckpointList', CheckpointListContract);
export const ChildRun = named('ChildRun', ChildRunContract);
export const ChildRunList = named('ChildRunList', ChildRunListContract);
export const StateRevision = named('StateRevision', StateRevisionContract);
export const DeliveryResponse = named('DeliveryResponse', DeliveryResponseContract);
export const HeldDeliveryResponse = named('HeldDeliveryResponse', HeldDeliveryResponseContract);
export const ToolList = named('ToolList', ToolListContract);
export const FunctionArtifact = named('FunctionArtifact', FunctionArtifactContract);
export const FunctionArtifactSource = named('FunctionArtifactSource', FunctionArtifactSourceContract);
export const Health = named('Health', HealthContract);
named('Timings', TimingsContract);
export const DeploymentConfig = named('DeploymentConfig', DeploymentConfigContract);
export { OpenApiDocument };

/**
 * `{code, message, details}`: the contract's error body, its code described with the codes of
 * this API (errors.ts). The client parses error answers with the contract's (lib/client/call.ts).
 */
export const ErrorBody = ErrorBodyContract.extend({
  code: z.string().openapi({
    example: 'run_not_found',
    description: `A stable code, one of: ${Object.keys(HTTP_ERROR_STATUS).join(', ')}.`,
  }),
}).openapi('Error');

/** The document each registry publishes. */
export const RegistryDocuments = {
  tools: ToolEntry,
  policy: PolicyDocument,
  agents: AgentEntry,
  workspaces: WorkspaceGrant,
} as const;

/** A run as it stood at one seq (lib/engine/upgrade/run-at.ts RunAtSeq). */
export const RunAtView = named('RunAtSeq', RunAtSeqContract);

/** The header that carries a run's control capability. */
export const CapabilityHeaders = z.object({
  'x-control-capability': z
    .string()
    .min(1)
    .optional()
    .openapi({
      param: { name: 'x-control-capability', in: 'header' },
      description: 'The run control capability returned by POST /runs; authorizes controls on that run.',
    }),
});

/** Any JSON value: a raisin.tool-result/1 envelope, or any other result (wrapped as legacy). */
export const ResultBody = z.unknown().openapi('ResultBody', {
  description: 'A raisin.tool-result/1 envelope, or any JSON value (normalized with legacy: true).',
});
