/**
 * `agent.external-runtime.turn-outcome.v1`: the outcome of one turn run by an external runtime,
 * with its 28 reason codes and three conditional rules. docs/contracts/turn-outcome.md.
 */
import { z } from 'zod';

export const TURN_OUTCOME_SCHEMA = 'agent.external-runtime.turn-outcome.v1';

export const TURN_OUTCOME_REASON_CODES = [
  'completed',
  'policy-denied',
  'binding-missing',
  'binding-stale',
  'binding-mismatch',
  'binding-expired',
  'binding-revoked',
  'profile-disabled',
  'profile-mismatch',
  'budget-exhausted',
  'usage-missing',
  'usage-malformed',
  'usage-overflow',
  'usage-conflict',
  'session-fence-mismatch',
  'session-lost',
  'event-malformed',
  'event-duplicate',
  'event-reordered',
  'event-oversized',
  'event-unauthorized',
  'event-stale',
  'event-timeout',
  'tool-not-admitted',
  'approval-not-admitted',
  'provider-unavailable',
  'cancelled',
  'unknown',
] as const;
export const TurnOutcomeReasonCode = z.enum(TURN_OUTCOME_REASON_CODES);

const Ref = z.string();
const Digest = z.string();
const FiniteBudget = z.record(z.string(), z.unknown());
const UsageValue = z.record(z.string(), z.unknown());

const TurnOutcomeFields = z.object({
  schema: z.literal(TURN_OUTCOME_SCHEMA),
  'outcome/ref': Ref,
  'turn/ref': Ref,
  'binding/ref': Ref,
  'agent/id': Ref,
  status: z.enum(['completed', 'refused', 'failed', 'cancelled', 'unknown']),
  'reason/code': TurnOutcomeReasonCode,
  retryability: z.enum(['terminal', 'retryable', 'reconciliation-required']),
  'product/ref': Ref.optional(),
  'product/digest': Digest.optional(),
  'budget/reserved': FiniteBudget,
  'budget/charged': UsageValue,
  'usage/fidelity': z.enum(['authoritative', 'host-measured', 'estimated', 'unavailable']),
  'session/checkpoint-ref': Ref.optional(),
  'selected/at': z.string(),
  'selected/by': Ref,
});

/**
 * The turn outcome with its conditional rules:
 * 1. status completed requires product/ref and product/digest;
 * 2. status refused, failed, cancelled or unknown forbids both;
 * 3. status unknown requires retryability reconciliation-required and reason/code unknown.
 */
export const TurnOutcome = TurnOutcomeFields.superRefine((o, ctx) => {
  if (o.status === 'completed') {
    for (const field of ['product/ref', 'product/digest'] as const) {
      if (o[field] === undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: 'required when status is completed' });
    }
  } else {
    for (const field of ['product/ref', 'product/digest'] as const) {
      if (o[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `forbidden when status is ${o.status}` });
    }
  }
  if (o.status === 'unknown') {
    if (o.retryability !== 'reconciliation-required')
      ctx.addIssue({
        code: 'custom',
        path: ['retryability'],
        message: 'must be reconciliation-required when status is unknown',
      });
    if (o['reason/code'] !== 'unknown')
      ctx.addIssue({
        code: 'custom',
        path: ['reason/code'],
        message: 'must be unknown when status is unknown',
      });
  }
});
export type TurnOutcome = z.infer<typeof TurnOutcome>;
export { TurnOutcomeFields };
