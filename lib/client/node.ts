/**
 * The Node-only part of the client package (`@agent-runs/client/node`): the local stack's state
 * file `.agent-runs/local.json` (URL and token), which the CLI reads for its defaults.
 */
export {
  LOCAL_STATE_PATH,
  LocalState,
  LocalStateError,
  readLocalState,
  removeLocalState,
  writeLocalState,
} from './state-file.ts';
