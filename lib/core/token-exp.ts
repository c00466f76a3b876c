/**
 * The bound on a bearer token's `exp` the runtime accepts, over HTTP and on the live socket
 * alike: a whole number of seconds since the epoch (a safe integer) no more than
 * MAX_TOKEN_LIFETIME_S ahead of now. A token past it (`exp: 1e300`, a fraction) is refused 401:
 * its `exp` could not be stored as a socket's lifetime, and no issuer means a token to live
 * that long. docs/guides/who-may-do-what.md.
 */

/** How far ahead of now a token's `exp` may lie (seconds): 366 days. */
export const MAX_TOKEN_LIFETIME_S = 366 * 86_400;

/**
 * Why a token's `exp` claim is refused, or null when it is acceptable. `exp` as the token or
 * API Gateway gives it: a number, or a string of decimal digits (API Gateway passes claims as
 * strings). `nowMs`: the clock (ms since epoch). An absent `exp` is not judged here (null).
 */
export function tokenExpProblem(exp: unknown, nowMs: number): string | null {
  if (exp === undefined || exp === null) return null;
  const value = typeof exp === 'string' && /^\d{1,16}$/.test(exp) ? Number(exp) : exp;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    return 'the token exp is not a whole number of seconds since the epoch';
  if (value > Math.floor(nowMs / 1000) + MAX_TOKEN_LIFETIME_S)
    return `the token exp lies more than ${MAX_TOKEN_LIFETIME_S / 86_400} days ahead; get a token that expires sooner`;
  return null;
}
