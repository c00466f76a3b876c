/**
 * The default agent reducer's function path, in a file of its own so a browser bundle (the
 * console) can name it without artifact.ts's `node:fs`.
 */

/** The function path the default agent reducer is registered at. */
export const AGENT_LOOP_PATH = '/lib/raisin/ai/agent-run-reducer';
