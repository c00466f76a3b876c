/** Core's one answer to "must the operation in flight end?". */
import { describe, expect, it } from 'vitest';
import { operationMustEnd } from '../../lib/core/guards.ts';

describe('operationMustEnd', () => {
  it('answers stop for a cancelling run, even with an interrupt requested', () => {
    expect(operationMustEnd({ status: 'cancelling' })).toBe('stop');
    expect(operationMustEnd({ status: 'cancelling', interrupt_requested: 's1' })).toBe('stop');
  });

  it('answers interrupt for a running run a steer asked to interrupt', () => {
    expect(operationMustEnd({ status: 'running', interrupt_requested: 's1' })).toBe('interrupt');
  });

  it('answers null for a running run with no stop and no interrupt (record or status view)', () => {
    expect(operationMustEnd({ status: 'running' })).toBeNull();
    expect(operationMustEnd({ status: 'running', interrupt_requested: null })).toBeNull();
  });
});
