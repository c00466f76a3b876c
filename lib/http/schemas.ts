/**
 * The HTTP API's own wire shapes (envelopes around the contracts: pages, lists, the error body,
 * query and path parameters). Run records, events, controls, acks and tool descriptors are the
 * contracts' schemas themselves (lib/contracts), so the OpenAPI document and the validators
 * come from one source. Issue 5, "The HTTP API".
 */
/**
 * The HTTP API's own wire shapes: the query, path and header parameters. Every body and answer
 * is a contract's schema (lib/contracts; the answers' envelopes in http-api.ts), the very object
 * the client parses with, named here once so that the document refers to it ($ref) instead of
 * repeating it. Issue 5, "The HTTP API"; issue 30 ("one set of wire schemas").
 */
import { zodToOpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '@hono/zod-openapi';
import {
  AgentEntry as AgentEntryContract,
  Checkpoint as CheckpointContract,
  CheckpointList as CheckpointListContract,
  ChildRun as ChildRunContract,
  ChildRunList as ChildRunListContract,
  ControlAck as ControlAckContract,
  Control as ControlContract,
  CreateRunInput as CreateRunInputContract,
  CreateRunResponse as CreateRunResponseContract,
  cleanId,
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
  PublishResult as PublishResultContract,
  RegistryEntry as RegistryEntryContract,
  RegistryEntryView as RegistryEntryViewContract,
  RegistryListing as RegistryListingContract,
  RunAtSeq as RunAtSeqContract,
  RunEvent as RunEventContract,
  RunList as RunListContract,
  RunRecord as RunRecordContract,
  RunStatus,
  StateRevision as StateRevisionContract,
  Subject,
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

export const RunRecord = named('RunRecord', RunRecordContract);
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
export const Checkpoint = named('Checkpoint', CheckpointContract);
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

/** `GET /admin/{kind}/entry?name=&version=`: the version defaults to the current one. */
export const RegistryEntryQuery = z.object({
  name: z
    .string()
    .min(1)
    .max(128)
    .openapi({ param: { name: 'name', in: 'query' }, example: 'lookup_order' }),
  version: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .openapi({ param: { name: 'version', in: 'query' }, example: '1.0.0' }),
});

/**
 * A whole-number query or path parameter: a string of digits (as it arrives), parsed to a
 * number in [min, max]; `fallback` when absent.
 */
function wholeNumber(min: number, max: number, fallback?: number) {
  const digits = z.string().regex(/^\d{1,15}$/, 'expected a whole number');
  const parsed = (fallback === undefined ? digits : digits.default(String(fallback))).transform(Number);
  return parsed.pipe(z.number().int().min(min).max(max));
}

/** A run id in the path. */
export const RunIdParams = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'run_0f3c...' }),
});

/** Listing: by status (`status`), or by subject (`subject_workspace` + `subject_path`: the live run). */
export const ListRunsQuery = z
  .object({
    status: RunStatus.optional().openapi({ param: { name: 'status', in: 'query' } }),
    subject_workspace: Subject.shape.workspace
      .optional()
      .openapi({ param: { name: 'subject_workspace', in: 'query' } }),
    subject_path: Subject.shape.path.optional().openapi({ param: { name: 'subject_path', in: 'query' } }),
    limit: wholeNumber(1, 100, 20).openapi({
      param: { name: 'limit', in: 'query', description: '1..100 (default 20).' },
    }),
    cursor: z
      .string()
      .min(1)
      .max(2048)
      .optional()
      .openapi({ param: { name: 'cursor', in: 'query' } }),
  })
  .superRefine((q, ctx) => {
    const subjectGiven = q.subject_workspace !== undefined || q.subject_path !== undefined;
    if (subjectGiven && (q.subject_workspace === undefined || q.subject_path === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [q.subject_workspace === undefined ? 'subject_workspace' : 'subject_path'],
        message: 'subject_workspace and subject_path go together',
      });
    }
    if (!subjectGiven && q.status === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['status'],
        message: 'give status, or subject_workspace and subject_path',
      });
    }
  });

/** Maximum long-polling wait, in seconds. */
export const MAX_WAIT_SECONDS = 20;

export const EventsQuery = z.object({
  after: wholeNumber(0, Number.MAX_SAFE_INTEGER, 0).openapi({
    param: { name: 'after', in: 'query', description: 'Return events with seq > after (default 0).' },
  }),
  limit: wholeNumber(1, 1000, 100).openapi({
    param: { name: 'limit', in: 'query', description: '1..1000 (default 100).' },
  }),
  wait: z
    .string()
    .regex(/^\d{1,3}(\.\d{1,3})?$/, 'expected a number of seconds')
    .default('0')
    .transform(Number)
    .pipe(z.number().min(0).max(MAX_WAIT_SECONDS))
    .openapi({
      param: {
        name: 'wait',
        in: 'query',
        description: 'Seconds (0..20, default 0) to wait for an event after `after` when there is none yet.',
      },
    }),
});

export const CheckpointParams = RunIdParams.extend({
  n: wholeNumber(0, Number.MAX_SAFE_INTEGER).openapi({ param: { name: 'n', in: 'path' } }),
});

/** `GET /runs/{id}/at/{seq}`: a seq of the run's log. */
export const RunAtParams = RunIdParams.extend({
  seq: wholeNumber(1, Number.MAX_SAFE_INTEGER).openapi({ param: { name: 'seq', in: 'path' } }),
});

/** A run as it stood at one seq (lib/engine/upgrade/run-at.ts RunAtSeq). */
export const RunAtView = named('RunAtSeq', RunAtSeqContract);

/** `?rev=`: a domain state revision (default: the run's current one). */
export const StateQuery = z.object({
  rev: wholeNumber(0, Number.MAX_SAFE_INTEGER)
    .optional()
    .openapi({
      param: { name: 'rev', in: 'query', description: 'The state revision (default: the current one).' },
    }),
});

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

export const ResumeKeyParams = z.object({
  /** No control characters (contracts cleanId): 400 validation_failed, whatever the key's state. */
  resume_key: cleanId(1024).openapi({ param: { name: 'resume_key', in: 'path' } }),
});

/** Any JSON value: a raisin.tool-result/1 envelope, or any other result (wrapped as legacy). */
export const ResultBody = z.unknown().openapi('ResultBody', {
  description: 'A raisin.tool-result/1 envelope, or any JSON value (normalized with legacy: true).',
});

/** The caller-chosen id of a delivery: a repeat with the same id is answered as a duplicate. */
export const DeliveryQuery = z.object({
  delivery_id: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[A-Za-z0-9._:~-]+$/, 'letters, digits and . _ : ~ -')
    .optional()
    .openapi({
      param: { name: 'delivery_id', in: 'query' },
      description:
        'Caller-chosen id of this delivery: a repeat gets {ack: "duplicate", original_seq} instead of a second result. Without it a repeat cannot be recognized.',
    }),
});

export const FunctionParams = z.object({
  path: z
    .string()
    .max(512)
    .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'segments of letters, digits, . _ - separated by /')
    .refine((p) => !p.split('/').some((s) => s === '.' || s === '..'), 'no . or .. segments')
    .openapi({
      param: { name: 'path', in: 'path' },
      description: 'The function path without its leading slash; may contain slashes (agents/x → /agents/x).',
    }),
});
