/**
 * The live socket's bounds from lib/config.ts: AGENT_RUNS_LIVE_MAX_CONNECTIONS
 * (open sockets per principal, default 8), AGENT_RUNS_LIVE_MAX_SUBSCRIPTIONS (runs per socket,
 * default 16) and AGENT_RUNS_LIVE_SUBSCRIBES_PER_MINUTE (subscribe messages per socket per
 * minute, default 60). A principal thus holds at most 8 × 16 subscriptions and makes the server
 * replay a log at most 8 × 60 times a minute; AGENT_RUNS_LIVE_REPLAY_BYTES per
 * AGENT_RUNS_LIVE_REPLAY_WINDOW_MS (default 4 MiB per 10 s) bounds the bytes those catch-ups
 * send, whatever their number. Throws ConfigError on a bad value.
 */
import { configFromEnv } from '../config.ts';
import type { LiveLimits } from './ports.ts';

/** The bounds an environment sets (unset variables: the defaults). Throws ConfigError. */
export function liveLimitsFromEnv(env: Readonly<Record<string, string | undefined>>): LiveLimits {
  const c = configFromEnv(env);
  return {
    maxConnections: c.AGENT_RUNS_LIVE_MAX_CONNECTIONS,
    maxSubscriptions: c.AGENT_RUNS_LIVE_MAX_SUBSCRIPTIONS,
    subscribesPerMinute: c.AGENT_RUNS_LIVE_SUBSCRIBES_PER_MINUTE,
    replayBytes: c.AGENT_RUNS_LIVE_REPLAY_BYTES,
    replayWindowMs: c.AGENT_RUNS_LIVE_REPLAY_WINDOW_MS,
  };
}

/** The defaults: room for a console that follows a few runs per tab in a few tabs. */
export const DEFAULT_LIVE_LIMITS: LiveLimits = liveLimitsFromEnv({});
