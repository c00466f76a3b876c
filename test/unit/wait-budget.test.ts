/**
 * A long poll or an event stream waits no longer than its caller's token is valid
 * (lib/http/wait-slots.ts waitBudgetMs): the `exp` claim API Gateway's JWT authorizer passes
 * (seconds, a string or a number) cuts the wait, beside the Lambda invocation's remaining time.
 */
import { describe, expect, it } from 'vitest';
import { ANSWER_MARGIN_MS, waitBudgetMs } from '../../lib/http/wait-slots.ts';

const NOW = 1_800_000_000_000;
const withClaims = (claims: Record<string, unknown>, remaining?: number) => ({
  event: { requestContext: { authorizer: { jwt: { claims } } } },
  ...(remaining !== undefined ? { lambdaContext: { getRemainingTimeInMillis: () => remaining } } : {}),
});

describe('the wait a request may have', () => {
  it('ends when the token does', () => {
    expect(waitBudgetMs(20_000, withClaims({ exp: String(NOW / 1000 + 3) }), NOW)).toBe(3_000);
    expect(waitBudgetMs(20_000, withClaims({ exp: NOW / 1000 + 3 }), NOW)).toBe(3_000);
    // A token already past its exp waits not at all.
    expect(waitBudgetMs(20_000, withClaims({ exp: NOW / 1000 - 5 }), NOW)).toBe(0);
  });

  it('keeps the asked wait when the token outlives it, and the invocation bound beside it', () => {
    expect(waitBudgetMs(20_000, withClaims({ exp: NOW / 1000 + 3_600 }), NOW)).toBe(20_000);
    expect(waitBudgetMs(20_000, withClaims({ exp: NOW / 1000 + 3_600 }, 5_000), NOW)).toBe(
      5_000 - ANSWER_MARGIN_MS,
    );
    expect(waitBudgetMs(20_000, withClaims({ exp: NOW / 1000 + 2 }, 5_000), NOW)).toBe(2_000);
    // No claims (the local bearer token) and a claim that is no number: the asked wait.
    expect(waitBudgetMs(20_000, {}, NOW)).toBe(20_000);
    expect(waitBudgetMs(20_000, withClaims({ exp: 'soon' }), NOW)).toBe(20_000);
  });
});
