/**
 * The HTTP API's routes as OpenAPI route definitions (createRoute + the zod schemas): the app
 * validates requests with them and `GET /openapi.json` is generated from them, so the document
 * and the behaviour cannot drift.
 */
import { createRoute, z } from '@hono/zod-openapi';
import {
  CheckpointParams,
  DeliveryQuery,
  EventsQuery,
  FunctionParams,
  ListRunsQuery,
  RegistryEntryQuery,
  ResumeKeyParams,
  RunAtParams,
  RunIdParams,
  StateQuery,
  StreamQuery,
} from '../contracts/http-params.ts';
import type { RegistryKind } from '../contracts/index.ts';
import {
  BeginOperationInput,
  BeginOperationResponse,
  ClientWriteResponse,
  CompleteRunInput,
  FailRunInput,
  FenceBody,
  LeaseRequest,
  LeaseResponse,
  LeaseView,
  OpenRequestInput,
  OpenRequestResponse,
  ReportOutcomeInput,
  ReportOutcomeResponse,
  TakeSteersResponse,
} from './client-schemas.ts';
import { reducerCheckRoute, reducerUpgradeRoute } from './reducer-schemas.ts';
import { CREATE_429, errors, json, op, PUBLIC_ERRORS, WAIT_429 } from './route-parts.ts';
import {
  CapabilityHeaders,
  Checkpoint,
  CheckpointList,
  ChildRunList,
  Control,
  ControlAck,
  CreateRunInput,
  CreateRunResponse,
  DeliveryResponse,
  DeploymentConfig,
  EventPage,
  ForkRunInput,
  FunctionArtifact,
  FunctionArtifactSource,
  Health,
  HeldDeliveryResponse,
  OpenApiDocument,
  PublishResult,
  RegistryDocuments,
  RegistryEntryView,
  RegistryListing,
  ResultBody,
  RunAtView,
  RunList,
  RunRecord,
  StateRevision,
  ToolList,
} from './schemas.ts';

export { TAGS } from './route-parts.ts';

export const healthRoute = createRoute({
  ...op('getHealth', 'meta'),
  method: 'get',
  path: '/health',
  summary: 'Liveness (no authentication).',
  security: [],
  responses: { 200: { description: 'The API is up.', content: json(Health) }, ...PUBLIC_ERRORS },
});

export const configRoute = createRoute({
  ...op('getConfig', 'meta'),
  method: 'get',
  path: '/config',
  summary:
    "The deployment's timings (lease, heartbeat, skew allowance, sweeper period): what a client's hints assume.",
  responses: {
    200: { description: "The deployment's settings.", content: json(DeploymentConfig) },
    ...errors(),
  },
});

export const openapiRoute = createRoute({
  ...op('getOpenApiDocument', 'meta'),
  method: 'get',
  path: '/openapi.json',
  summary: 'This document (no authentication).',
  security: [],
  responses: {
    200: {
      description: 'The OpenAPI 3.1 document.',
      content: json(OpenApiDocument),
    },
    ...PUBLIC_ERRORS,
  },
});

export const createRunRoute = createRoute({
  ...op('createRun', 'runs'),
  method: 'post',
  path: '/runs',
  summary: 'Create a run, or return the subject live run / the create_key run (created: false).',
  request: { body: { required: true, content: json(CreateRunInput) } },
  responses: {
    201: {
      description: 'Created; control_capability is returned this once.',
      content: json(CreateRunResponse),
    },
    200: {
      description: 'An existing run: the subject live run, or a create_key replay.',
      content: json(CreateRunResponse),
    },
    ...errors(400, 403, 409, 413, 415, 422),
    429: CREATE_429,
  },
});

export const getRunRoute = createRoute({
  ...op('getRun', 'runs'),
  method: 'get',
  path: '/runs/{id}',
  summary: 'A run with its effective projection.',
  request: { params: RunIdParams, headers: CapabilityHeaders },
  responses: {
    200: { description: 'The run.', content: json(RunRecord) },
    ...errors(400, 403, 404),
  },
});

export const listRunsRoute = createRoute({
  ...op('listRuns', 'runs'),
  method: 'get',
  path: '/runs',
  summary:
    "Runs by status (newest first, paged by an opaque cursor bound to the caller): a user's or agent's own runs only (its own principal's, read without touching anyone else's), every run for a system caller; or the live run of a subject, if the caller may read it.",
  request: { query: ListRunsQuery },
  responses: {
    200: { description: 'A page of runs.', content: json(RunList) },
    ...errors(400),
  },
});

export const eventsRoute = createRoute({
  ...op('listRunEvents', 'runs'),
  method: 'get',
  path: '/runs/{id}/events',
  summary:
    'Events with seq > after; with wait > 0, long-polls up to wait seconds (max 20) for the first one.',
  request: { params: RunIdParams, query: EventsQuery, headers: CapabilityHeaders },
  responses: {
    200: { description: 'A page of events (possibly empty after the wait).', content: json(EventPage) },
    ...errors(400, 403, 404, 409),
    429: WAIT_429,
  },
});

export const checkpointsRoute = createRoute({
  ...op('listRunCheckpoints', 'runs'),
  method: 'get',
  path: '/runs/{id}/checkpoints',
  summary: 'The run checkpoints, in order.',
  request: { params: RunIdParams, headers: CapabilityHeaders },
  responses: {
    200: { description: 'The checkpoints.', content: json(CheckpointList) },
    ...errors(400, 403, 404),
  },
});

export const childrenRoute = createRoute({
  ...op('listRunChildren', 'runs'),
  method: 'get',
  path: '/runs/{id}/children',
  summary: 'The child runs this run delegated to (delegate tool calls), oldest first.',
  request: { params: RunIdParams, headers: CapabilityHeaders },
  responses: {
    200: { description: 'The children.', content: json(ChildRunList) },
    ...errors(400, 403, 404),
  },
});

export const checkpointRoute = createRoute({
  ...op('getRunCheckpoint', 'runs'),
  method: 'get',
  path: '/runs/{id}/checkpoints/{n}',
  summary: 'One checkpoint.',
  request: { params: CheckpointParams, headers: CapabilityHeaders },
  responses: {
    200: { description: 'The checkpoint.', content: json(Checkpoint) },
    ...errors(400, 403, 404),
  },
});

export const stateRoute = createRoute({
  ...op('getRunState', 'runs'),
  method: 'get',
  path: '/runs/{id}/state',
  summary:
    'A domain state revision: the current one, or one a checkpoint references (?rev=). Write-once: a revision never changes.',
  request: { params: RunIdParams, query: StateQuery, headers: CapabilityHeaders },
  responses: {
    200: { description: 'The state revision.', content: json(StateRevision) },
    ...errors(400, 403, 404),
  },
});

export const runAtRoute = createRoute({
  ...op('getRunAtSeq', 'runs'),
  method: 'get',
  path: '/runs/{id}/at/{seq}',
  summary:
    'The run as it stood at seq (time travel, no new run): status, usage, open requests, the state revision and state, and the projection the pinned reducer gives again. 404 seq_not_found outside 1..last_seq.',
  request: { params: RunAtParams, headers: CapabilityHeaders },
  responses: {
    200: { description: 'The run at seq.', content: json(RunAtView) },
    ...errors(400, 403, 404),
  },
});

export const forkRoute = createRoute({
  ...op('forkRun', 'runs'),
  method: 'post',
  path: '/runs/{id}/fork',
  summary:
    'Create a run from checkpoint n of this run, owned by the caller (who must be able to read this run), optionally with an edited state and input. The original is not changed.',
  request: {
    params: RunIdParams,
    headers: CapabilityHeaders,
    body: { required: true, content: json(ForkRunInput) },
  },
  responses: {
    201: {
      description: 'Forked; control_capability is returned this once.',
      content: json(CreateRunResponse),
    },
    200: { description: 'A create_key replay: the fork made before.', content: json(CreateRunResponse) },
    ...errors(400, 403, 404, 409, 413, 415, 422),
    429: CREATE_429,
  },
});

export const controlRoute = createRoute({
  ...op('applyControl', 'controls'),
  method: 'post',
  path: '/runs/{id}/controls',
  summary:
    'Apply a control. Every ack is 200: applied, duplicate (same control_id and command), and rejected (logged as an event, e.g. run_terminal, digest_mismatch, unauthorized).',
  request: {
    params: RunIdParams,
    headers: CapabilityHeaders,
    body: { required: true, content: json(Control) },
  },
  responses: {
    200: { description: 'The ack.', content: json(ControlAck) },
    ...errors(400, 403, 404, 413, 415),
  },
});

export const deliverRoute = createRoute({
  ...op('deliverResult', 'results'),
  method: 'post',
  path: '/results/{resume_key}',
  summary:
    "Deliver the result a waiting operation parked under resume_key. A caller who may not see the key's run gets 404 resume_key_not_found whether the key is unused, used, holds an early result or is unknown.",
  request: {
    params: ResumeKeyParams,
    query: DeliveryQuery,
    headers: CapabilityHeaders,
    body: { required: true, content: json(ResultBody) },
  },
  responses: {
    200: {
      description: 'Delivered (the seq of the result event), or a duplicate.',
      content: json(DeliveryResponse),
    },
    202: {
      description: 'Held (system callers only): the wait is not recorded yet.',
      content: json(HeldDeliveryResponse),
    },
    ...errors(400, 403, 404, 409, 413, 415),
  },
});

export const eventStreamRoute = createRoute({
  ...op('streamRunEvents', 'runs'),
  method: 'get',
  path: '/runs/{id}/events/stream',
  summary:
    'Server-sent events: every event with seq > after (or the Last-Event-ID header) as `event: run_event` with `id: seq`, then `event: settled` once the run ended and nothing will follow. API Gateway buffers a response, so each response ends after the events found within `wait` seconds; EventSource reconnects with Last-Event-ID, and a settled run answers 204 so that it stops.',
  request: { params: RunIdParams, query: StreamQuery, headers: CapabilityHeaders },
  responses: {
    200: { description: 'An event stream.', content: { 'text/event-stream': { schema: z.string() } } },
    204: { description: 'The run is settled and the client has every event: stop reconnecting.' },
    ...errors(400, 403, 404, 409),
    429: WAIT_429,
  },
});

/** A client-driven write route: POST {path} with `body`, answering `response`. */
function clientWrite<B extends z.ZodType, R extends z.ZodType>(
  operationId: string,
  path: string,
  summary: string,
  body: B,
  response: R,
) {
  return createRoute({
    ...op(operationId, 'clients'),
    method: 'post',
    path,
    summary,
    request: {
      params: RunIdParams,
      headers: CapabilityHeaders,
      body: { required: true, content: json(body) },
    },
    responses: {
      200: { description: 'Done.', content: json(response) },
      ...errors(400, 403, 404, 409, 413, 415),
    },
  });
}

export const takeLeaseRoute = clientWrite(
  'takeLease',
  '/runs/{id}/lease',
  'Take the lease of a client-driven run as `owner` (epoch + 1), or renew the fence {owner, epoch}. The run in the answer shows a stop (cancelling) and queued steers. 409 lease_held while another client holds it.',
  LeaseRequest,
  LeaseResponse,
);
export const releaseLeaseRoute = clientWrite(
  'releaseLease',
  '/runs/{id}/lease/release',
  'Let the lease go between operations (epoch + 1): the run waits for a client, never stepped by the server.',
  FenceBody,
  ClientWriteResponse,
);
export const beginOperationRoute = clientWrite(
  'beginOperation',
  '/runs/{id}/operations',
  'Begin an operation the client executes (budgets checked first: operation null when the run paused or failed instead).',
  BeginOperationInput,
  BeginOperationResponse,
);
export const reportOutcomeRoute = clientWrite(
  'reportOperationOutcome',
  '/runs/{id}/operations/outcome',
  'Report how the operation op_id ended: a result or an external-runtime turn outcome v1 (usage charged in the same commit; a cancelling run ends stopped).',
  ReportOutcomeInput,
  ReportOutcomeResponse,
);
export const openRequestRoute = clientWrite(
  'openRequest',
  '/runs/{id}/requests',
  'Open an approval or a question between operations (answered with the approve / provide_input controls).',
  OpenRequestInput,
  OpenRequestResponse,
);
export const takeSteersRoute = clientWrite(
  'takeSteers',
  '/runs/{id}/steers/take',
  'Take every queued steer at a boundary (steer_consumed events).',
  FenceBody,
  TakeSteersResponse,
);
export const completeRunRoute = clientWrite(
  'completeRun',
  '/runs/{id}/complete',
  'Complete the run (run_completed).',
  CompleteRunInput,
  ClientWriteResponse,
);
export const failRunRoute = clientWrite(
  'failRun',
  '/runs/{id}/fail',
  'Fail the run with the client code (run_failed).',
  FailRunInput,
  ClientWriteResponse,
);

export const leaseRoute = createRoute({
  ...op('getLease', 'clients'),
  method: 'get',
  path: '/runs/{id}/lease',
  summary: 'Who holds the run lease, at which epoch, until when, and what operation is in flight.',
  request: { params: RunIdParams, headers: CapabilityHeaders },
  responses: { 200: { description: 'The lease.', content: json(LeaseView) }, ...errors(400, 403, 404) },
});

export const CLIENT_ROUTES = [
  takeLeaseRoute,
  releaseLeaseRoute,
  beginOperationRoute,
  reportOutcomeRoute,
  openRequestRoute,
  takeSteersRoute,
  completeRunRoute,
  failRunRoute,
] as const;

export const toolsRoute = createRoute({
  ...op('listTools', 'tools'),
  method: 'get',
  path: '/v1/tools',
  summary: 'Registered tools: metadata only, never handlers or credentials.',
  responses: {
    200: { description: 'The tools, by name.', content: json(ToolList) },
    ...errors(),
  },
});

/**
 * `PUT /functions/{path}`: the path parameter may contain slashes, so hono routes it as
 * `/functions/:path{.+}`; this definition is registered for the document only.
 */
export const putFunctionRoute = createRoute({
  ...op('putFunction', 'functions'),
  method: 'put',
  path: '/functions/{path}',
  summary:
    'Register a reducer artifact (admin only). Runs already bound keep the hash they pinned. Paths starting with /lib/raisin or /lib/models (case-blind) are reserved: 403 reserved_path for every caller.',
  request: {
    params: FunctionParams,
    body: {
      required: true,
      content: {
        'application/javascript': { schema: z.string().openapi({ description: 'An ES module (QuickJS).' }) },
        'application/wasm': { schema: z.string().openapi({ format: 'binary' }) },
        'text/x-starlark': {
          schema: z
            .string()
            .openapi({ description: 'A Starlark file (go.starlark.net); also application/x-starlark.' }),
        },
      },
    },
  },
  responses: {
    200: { description: 'Registered.', content: json(FunctionArtifact) },
    ...errors(400, 403, 409, 413, 415),
  },
});

export const getFunctionRoute = createRoute({
  ...op('getFunction', 'functions'),
  method: 'get',
  path: '/functions/{path}',
  summary:
    'The artifact registered at a path now, with its bytes (admin only): what `agent-runs reducers check --path P --hash H` checks. 404 function_not_found when none is.',
  request: { params: FunctionParams },
  responses: {
    200: { description: 'The artifact.', content: json(FunctionArtifactSource) },
    ...errors(400, 403, 404),
  },
});

/** The operation names of one registry's routes (publish, list, get). */
const REGISTRY_OPERATIONS: Record<
  RegistryKind,
  { publish: string; list: string; get: string; what: string }
> = {
  tools: {
    publish: 'publishTool',
    list: 'listToolEntries',
    get: 'getToolEntry',
    what: 'a tool (name, semver, input schema, target, metadata)',
  },
  policy: {
    publish: 'publishPolicy',
    list: 'listPolicyEntries',
    get: 'getPolicyEntry',
    what: 'the tool policy (ordered rules, default effect)',
  },
  agents: {
    publish: 'publishAgent',
    list: 'listAgents',
    get: 'getAgent',
    what: 'an agent (id, whom it may act for, its tool rights)',
  },
  workspaces: {
    publish: 'publishWorkspaceGrant',
    list: 'listWorkspaceGrants',
    get: 'getWorkspaceGrant',
    what: 'a workspace grant (the users, groups and agents that may create runs in a workspace)',
  },
};

/**
 * The three routes of registry `kind`, one shape for all three registries:
 * `POST /admin/{kind}` publishes a document (201 new version, 200 the same document already
 * published), `GET /admin/{kind}` lists the current registry version, `GET /admin/{kind}/entry`
 * reads one published version (`?name=`, optional `&version=`) with the list of versions.
 */
function registryRoutes(kind: RegistryKind) {
  const names = REGISTRY_OPERATIONS[kind];
  const body = RegistryDocuments[kind];
  return {
    publish: createRoute({
      ...op(names.publish, 'registries'),
      method: 'post',
      path: `/admin/${kind}`,
      summary: `Publish ${names.what} as a new immutable version (admin only).`,
      request: { body: { required: true, content: json(body) } },
      responses: {
        201: { description: 'Published: a new registry version.', content: json(PublishResult) },
        200: {
          description: 'The same document was already published: its version.',
          content: json(PublishResult),
        },
        ...errors(400, 403, 409),
      },
    }),
    list: createRoute({
      ...op(names.list, 'registries'),
      method: 'get',
      path: `/admin/${kind}`,
      summary: `The current ${kind} registry version and its documents (admin only).`,
      responses: {
        200: { description: 'The current registry version.', content: json(RegistryListing) },
        ...errors(403),
      },
    }),
    get: createRoute({
      ...op(names.get, 'registries'),
      method: 'get',
      path: `/admin/${kind}/entry`,
      summary: `One published version of a ${kind} document, and every version published (admin only).`,
      request: { query: RegistryEntryQuery },
      responses: {
        200: { description: 'The entry and its versions, oldest first.', content: json(RegistryEntryView) },
        ...errors(400, 403, 404),
      },
    }),
  };
}

export const REGISTRY_ROUTES = {
  tools: registryRoutes('tools'),
  policy: registryRoutes('policy'),
  agents: registryRoutes('agents'),
  workspaces: registryRoutes('workspaces'),
} as const;

/** Every route definition, in document order (the client's agreement test reads their schemas). */
export const ROUTE_DEFINITIONS = [
  healthRoute,
  openapiRoute,
  configRoute,
  createRunRoute,
  listRunsRoute,
  getRunRoute,
  eventsRoute,
  checkpointsRoute,
  checkpointRoute,
  stateRoute,
  runAtRoute,
  forkRoute,
  childrenRoute,
  controlRoute,
  deliverRoute,
  eventStreamRoute,
  leaseRoute,
  ...CLIENT_ROUTES,
  toolsRoute,
  putFunctionRoute,
  getFunctionRoute,
  ...Object.values(REGISTRY_ROUTES).flatMap((r) => [r.publish, r.list, r.get]),
  reducerCheckRoute,
  reducerUpgradeRoute,
];

/** Every route, for the 405 check and the tests' coverage check. `pattern` matches a concrete path. */
export const ROUTES = ROUTE_DEFINITIONS.map((route) => ({
  method: route.method.toUpperCase(),
  path: route.path,
  pattern: new RegExp(
    `^${route.path.replace(/\{(\w+)\}/g, (_m, name: string) => (name === 'path' && route.path === putFunctionRoute.path ? '.+' : '[^/]+'))}$`,
  ),
}));

/** Paths that need no authentication. */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set([healthRoute.path, openapiRoute.path]);
