/**
 * What each operation of the HTTP API answers, by operationId and success status: the
 * contracts' schemas (lib/contracts), the very objects the routes of lib/http document and
 * validate with. Every client method parses its answer with its operation's entry here, and
 * test/unit/client-openapi.test.ts fails when an entry is not the route's own schema, when a
 * route has no entry, or when the client lacks a method named after an operationId.
 */
import {
  BeginOperationResponse,
  CheckpointList,
  ChildRunList,
  ClientWriteResponse,
  ControlAck,
  CreateRunResponse,
  DeliveryResponse,
  DeploymentConfig,
  EventPage,
  FunctionArtifact,
  FunctionArtifactSource,
  Health,
  HeldDeliveryResponse,
  LeaseResponse,
  LeaseView,
  OpenApiDocument,
  OpenRequestResponse,
  PublicCheckpoint,
  PublicRunRecord,
  PublishResult,
  ReducerCheckReport,
  ReducerUpgradeReport,
  RegistryEntryView,
  RegistryListing,
  ReportOutcomeResponse,
  RunAtSeq,
  RunList,
  StateRevision,
  TakeSteersResponse,
  ToolList,
} from '../contracts/index.ts';

/** The answers of one registry's three operations (publish: 201 a new version, 200 the same document). */
const registryAnswers = {
  publish: { 200: PublishResult, 201: PublishResult },
  list: { 200: RegistryListing },
  get: { 200: RegistryEntryView },
} as const;

/** The type of OPERATION_ANSWERS, spelled out (declaration emit cannot serialize the inferred one). */
export type OperationAnswers = {
  getHealth: { 200: typeof Health };
  getOpenApiDocument: { 200: typeof OpenApiDocument };
  createRun: { 200: typeof CreateRunResponse; 201: typeof CreateRunResponse };
  listRuns: { 200: typeof RunList };
  getRun: { 200: typeof PublicRunRecord };
  listRunEvents: { 200: typeof EventPage };
  listRunCheckpoints: { 200: typeof CheckpointList };
  getRunCheckpoint: { 200: typeof PublicCheckpoint };
  getRunState: { 200: typeof StateRevision };
  forkRun: { 200: typeof CreateRunResponse; 201: typeof CreateRunResponse };
  listRunChildren: { 200: typeof ChildRunList };
  applyControl: { 200: typeof ControlAck };
  deliverResult: { 200: typeof DeliveryResponse; 202: typeof HeldDeliveryResponse };
  streamRunEvents: Record<never, never>;
  getLease: { 200: typeof LeaseView };
  takeLease: { 200: typeof LeaseResponse };
  releaseLease: { 200: typeof ClientWriteResponse };
  beginOperation: { 200: typeof BeginOperationResponse };
  reportOperationOutcome: { 200: typeof ReportOutcomeResponse };
  openRequest: { 200: typeof OpenRequestResponse };
  takeSteers: { 200: typeof TakeSteersResponse };
  completeRun: { 200: typeof ClientWriteResponse };
  failRun: { 200: typeof ClientWriteResponse };
  listTools: { 200: typeof ToolList };
  putFunction: { 200: typeof FunctionArtifact };
  getFunction: { 200: typeof FunctionArtifactSource };
  getConfig: { 200: typeof DeploymentConfig };
  getRunAtSeq: { 200: typeof RunAtSeq };
  checkReducer: { 200: typeof ReducerCheckReport };
  upgradeReducerRuns: { 200: typeof ReducerUpgradeReport };
  publishTool: { 200: typeof PublishResult; 201: typeof PublishResult };
  listToolEntries: { 200: typeof RegistryListing };
  getToolEntry: { 200: typeof RegistryEntryView };
  publishPolicy: { 200: typeof PublishResult; 201: typeof PublishResult };
  listPolicyEntries: { 200: typeof RegistryListing };
  getPolicyEntry: { 200: typeof RegistryEntryView };
  publishAgent: { 200: typeof PublishResult; 201: typeof PublishResult };
  listAgents: { 200: typeof RegistryListing };
  getAgent: { 200: typeof RegistryEntryView };
  publishWorkspaceGrant: { 200: typeof PublishResult; 201: typeof PublishResult };
  listWorkspaceGrants: { 200: typeof RegistryListing };
  getWorkspaceGrant: { 200: typeof RegistryEntryView };
};

/**
 * The JSON answer of each operation, by success status. `streamRunEvents` answers
 * `text/event-stream` (parsed event by event with RunEvent, lib/client/live.ts), so it has none.
 */
export const OPERATION_ANSWERS: OperationAnswers = {
  getHealth: { 200: Health },
  getOpenApiDocument: { 200: OpenApiDocument },
  createRun: { 200: CreateRunResponse, 201: CreateRunResponse },
  listRuns: { 200: RunList },
  getRun: { 200: PublicRunRecord },
  listRunEvents: { 200: EventPage },
  listRunCheckpoints: { 200: CheckpointList },
  getRunCheckpoint: { 200: PublicCheckpoint },
  getRunState: { 200: StateRevision },
  forkRun: { 200: CreateRunResponse, 201: CreateRunResponse },
  listRunChildren: { 200: ChildRunList },
  applyControl: { 200: ControlAck },
  deliverResult: { 200: DeliveryResponse, 202: HeldDeliveryResponse },
  streamRunEvents: {},
  getLease: { 200: LeaseView },
  takeLease: { 200: LeaseResponse },
  releaseLease: { 200: ClientWriteResponse },
  beginOperation: { 200: BeginOperationResponse },
  reportOperationOutcome: { 200: ReportOutcomeResponse },
  openRequest: { 200: OpenRequestResponse },
  takeSteers: { 200: TakeSteersResponse },
  completeRun: { 200: ClientWriteResponse },
  failRun: { 200: ClientWriteResponse },
  listTools: { 200: ToolList },
  putFunction: { 200: FunctionArtifact },
  getFunction: { 200: FunctionArtifactSource },
  getConfig: { 200: DeploymentConfig },
  getRunAtSeq: { 200: RunAtSeq },
  checkReducer: { 200: ReducerCheckReport },
  upgradeReducerRuns: { 200: ReducerUpgradeReport },
  publishTool: registryAnswers.publish,
  listToolEntries: registryAnswers.list,
  getToolEntry: registryAnswers.get,
  publishPolicy: registryAnswers.publish,
  listPolicyEntries: registryAnswers.list,
  getPolicyEntry: registryAnswers.get,
  publishAgent: registryAnswers.publish,
  listAgents: registryAnswers.list,
  getAgent: registryAnswers.get,
  publishWorkspaceGrant: registryAnswers.publish,
  listWorkspaceGrants: registryAnswers.list,
  getWorkspaceGrant: registryAnswers.get,
};

/** An operationId of the HTTP API (the client has a method of each name). */
export type OperationId = keyof OperationAnswers;
