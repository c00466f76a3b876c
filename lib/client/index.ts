/**
 * The typed TypeScript client of the HTTP API: browser-safe (no `node:*` import), the main entry
 * of the `@agent-runs/client` package. The local stack's state file (Node only) is in
 * `./node.ts` (`@agent-runs/client/node`).
 */

export type {
  ControlAck,
  CreateRunInput,
  ForkRunInput,
  /** A run record as the API answers it (no storage key: lib/contracts/public-run.ts). */
  PublicRunRecord as RunRecord,
  RunEvent,
  RunStatus,
  ToolDescriptor,
} from '../contracts/index.ts';
export type { RetryOptions } from './call.ts';
export type { DeprecatedMethods } from './client.ts';
export { type AgentRunsClient, createClient } from './client.ts';
export type { ClientDrivenMethods, ClientWrite, LeaseView } from './client-driven.ts';
export {
  type DriveOptions,
  type DriveResult,
  type DriveSession,
  drive,
  type OperationReport,
} from './drive.ts';
export { ApiError, type ApiErrorCode, type ClientErrorCode } from './errors.ts';
export {
  type FollowLiveOptions,
  followLive,
  followSse,
  type LiveTarget,
  seqOrder,
  TOKEN_EXPIRED_CLOSE,
} from './live.ts';
export { OPERATION_ANSWERS, type OperationId } from './operations.ts';
export type { RegistryMethods } from './registry-methods.ts';
export {
  ARTIFACT_MEDIA_TYPES,
  type Checkpoint,
  type ClientOptions,
  type ControlInput,
  type ControlOptions,
  type CreateRunResult,
  type Delivery,
  type EventPage,
  type EventsParams,
  type FollowParams,
  type FunctionArtifact,
  type ListRunsParams,
  type RunCallOptions,
  type RunPage,
  type StateRevision,
} from './shapes.ts';
