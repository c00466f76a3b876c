/**
 * What each operation of the HTTP API answers, by operationId and success status: the
 * contracts' schemas (lib/contracts), the very objects the routes of lib/http document and
 * validate with. Every client method parses its answer with its operation's entry here, and
 * test/unit/client-openapi.test.ts fails when an entry is not the route's own schema, when a
 * route has no entry, or when the client lacks a method named after an operationId. Issue 30
 * ("one set of wire schemas").
 */
import {
  BeginOperationResponse,
  Checkpoint,
  CheckpointList,
  ChildRunList,
  ClientWriteResponse,
  ControlAck,
  CreateRunResponse,
  DeliveryResponse,
  EventPage,
  FunctionArtifact,
  Health,
  HeldDeliveryResponse,
  LeaseResponse,
  LeaseView,
  OpenApiDocument,
  OpenRequestResponse,
  PublishResult,
  RegistryEntryView,
  RegistryListing,
  ReportOutcomeResponse,
  RunList,
  RunRecord,
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

/**
 * The JSON answer of each operation, by success status. `streamRunEvents` answers
 * `text/event-stream` (parsed event by event with RunEvent, lib/client/live.ts), so it has none.
 */
export const OPERATION_ANSWERS = {
  getHealth: { 200: Health },
  getOpenApiDocument: { 200: OpenApiDocument },
  createRun: { 200: CreateRunResponse, 201: CreateRunResponse },
  listRuns: { 200: RunList },
  getRun: { 200: RunRecord },
  listRunEvents: { 200: EventPage },
  listRunCheckpoints: { 200: CheckpointList },
  getRunCheckpoint: { 200: Checkpoint },
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
} as const;

/** An operationId of the HTTP API (the client has a method of each name). */
export type OperationId = keyof typeof OPERATION_ANSWERS;
