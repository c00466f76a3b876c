/** lib/client: the typed TypeScript client of the HTTP API, and the local stack's state file. Issue 5. */
export {
  ARTIFACT_MEDIA_TYPES,
  type AgentRunsClient,
  type Checkpoint,
  type ClientOptions,
  type ControlInput,
  type ControlOptions,
  type CreateRunResult,
  createClient,
  type Delivery,
  type EventPage,
  type EventsParams,
  type FollowParams,
  type FunctionArtifact,
  type ListRunsParams,
  type RunCallOptions,
  type RunPage,
} from './client.ts';
export { ApiError } from './errors.ts';
export {
  LOCAL_STATE_PATH,
  LocalState,
  LocalStateError,
  readLocalState,
  removeLocalState,
  writeLocalState,
} from './state-file.ts';
