/**
 * The bound on open waits per caller: how many long polls (`GET /runs/{id}/events?wait=N`,
 * N > 0) and event streams (`GET /runs/{id}/events/stream`) one principal may hold open at
 * once, counted under the caller's quota key (core/principal.ts quotaKeyOf: an agent acting for
 * alice counts as alice). Past it a new one is refused 429 `too_many_waits` with Retry-After, before anything is
 * read. A wait frees its slot when it ends, however it ends (an answer, its timeout, the client
 * going away, an error).
 *
 * The count is PER PROCESS: the local stack holds one count for everyone; on Lambda each
 * control function instance counts only the waits it serves itself, so a caller whose waits
 * are spread over K instances may hold up to K × the bound in all. What bounds the whole
 * deployment there is the function's concurrency and the wait cap (20 s) under the function's
 * timeout (29 s, under API Gateway's 30 s integration limit).
 */
import { configFromEnv } from '../config.ts';
import { jwtClaimsOf } from './auth.ts';
import { HttpError } from './errors.ts';

/**
 * The default bound on open waits per principal (per process): room for a client that follows
 * a few dozen runs at once (the replay follows 8 conversations, each with its event poll and
 * its status reads), far below the hundreds an abandoned-poll flood opened.
 */
export const DEFAULT_MAX_OPEN_WAITS = 32;

/** Frees the slot a wait holds; calling it again does nothing. */
export type ReleaseSlot = () => void;

export interface WaitSlots {
  /**
   * Takes one of `principal`'s slots for a wait that ends at the latest at `deadlineMs` (epoch
   * ms), or throws HttpError `too_many_waits` (429, header Retry-After in whole seconds >= 1,
   * details `{max_open_waits, retry_after_s}`) when the principal holds all its slots.
   */
  acquire(principal: string, deadlineMs: number): ReleaseSlot;
  /** How many slots `principal` holds now. */
  held(principal: string): number;
}

/**
 * A per-process count of open waits, at most `max` per principal (a positive integer).
 * `now` (epoch ms, default Date.now) only computes Retry-After: the time until the principal's
 * earliest open wait reaches its deadline, rounded up to whole seconds, at least 1.
 */
export function createWaitSlots(max: number, now: () => number = Date.now): WaitSlots {
  if (!Number.isInteger(max) || max < 1)
    throw new RangeError(`max open waits must be a positive integer, got ${max}`);
  /** principal → the deadlines of its open waits (one entry per slot held). */
  const open = new Map<string, Set<{ deadline: number }>>();
  return {
    acquire(principal, deadlineMs) {
      let slots = open.get(principal);
      if (slots !== undefined && slots.size >= max) {
        const earliest = Math.min(...[...slots].map((s) => s.deadline));
        const retryAfter = Math.max(1, Math.ceil((earliest - now()) / 1000));
        throw new HttpError(
          'too_many_waits',
          `too many open waits: at most ${max} long polls and event streams at once per caller; retry after ${retryAfter} s`,
          { max_open_waits: max, retry_after_s: retryAfter },
          { headers: { 'Retry-After': String(retryAfter) } },
        );
      }
      if (slots === undefined) {
        slots = new Set();
        open.set(principal, slots);
      }
      const slot = { deadline: deadlineMs };
      slots.add(slot);
      const held = slots;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held.delete(slot);
        if (held.size === 0 && open.get(principal) === held) open.delete(principal);
      };
    },
    held(principal) {
      return open.get(principal)?.size ?? 0;
    },
  };
}

/**
 * The bound from `AGENT_RUNS_MAX_OPEN_WAITS` (a positive integer; unset or empty: 32; lib/config.ts).
 * Throws ConfigError naming the variable when it is set to anything else.
 */
export function maxOpenWaitsFromEnv(env: Record<string, string | undefined>): number {
  return configFromEnv(env).AGENT_RUNS_MAX_OPEN_WAITS;
}

/**
 * Runs `wait` (a read that may wait up to `waitMs` ms) in one of `principal`'s slots, freed when
 * it settles, whether it answered or threw. A read that does not wait (`waitMs` <= 0) takes no
 * slot. Throws `too_many_waits` (see {@link WaitSlots.acquire}) before `wait` is called.
 */
export async function inWaitSlot<T>(
  slots: WaitSlots,
  principal: string,
  waitMs: number,
  wait: () => Promise<T>,
): Promise<T> {
  if (waitMs <= 0) return wait();
  const release = slots.acquire(principal, Date.now() + waitMs);
  try {
    return await wait();
  } finally {
    release();
  }
}

/** What a wait leaves of the Lambda invocation's time to answer in (ms). */
export const ANSWER_MARGIN_MS = 1_000;

/**
 * The wait a request may have (ms): `requestedMs`, cut so that it ends {@link ANSWER_MARGIN_MS}
 * before the Lambda invocation's time runs out when the app runs in Lambda (hono's adapter puts
 * the invocation's context in `env.lambdaContext`), and so that it ends when the caller's token
 * does (its `exp` claim, seconds, as API Gateway's JWT authorizer passes it in
 * `env.event.requestContext.authorizer.jwt.claims`): a wait answers with what it found so far then,
 * and the next request is refused 401 like any other with that token. On API Gateway the function
 * never learns that a client went away, so this and the 20 s cap are what bound a long poll there.
 */
export function waitBudgetMs(requestedMs: number, env: unknown, now: number = Date.now()): number {
  const context = (env as { lambdaContext?: { getRemainingTimeInMillis?: () => number } } | undefined)
    ?.lambdaContext;
  const remaining = context?.getRemainingTimeInMillis?.();
  const untilExp = tokenLeftMs(env, now);
  let budget = Math.min(requestedMs, untilExp);
  if (typeof remaining === 'number' && Number.isFinite(remaining))
    budget = Math.min(budget, remaining - ANSWER_MARGIN_MS);
  return Math.max(0, budget);
}

/** How long the request's token is still valid (ms), from its `exp` claim; Infinity without one. */
function tokenLeftMs(env: unknown, now: number): number {
  const exp = Number(jwtClaimsOf(env)?.exp);
  return Number.isSafeInteger(exp) ? exp * 1000 - now : Number.POSITIVE_INFINITY;
}
