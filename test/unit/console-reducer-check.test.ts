/** The console's verdict line on a reducer check ("would the new reducer agree?"). */
import { describe, expect, it } from 'vitest';
import { checkVerdict } from '../../console/src/model/reducer-check.ts';

const artifact = { kind: 'js', hash: 'abcdef0123456789'.repeat(4) };

describe('checkVerdict', () => {
  it('agrees on an identical run, naming the decisions compared and the artifact', () => {
    const report = { artifact, runs: [{ run_id: 'r1', result: 'identical', deliveries: 7 }] };
    expect(checkVerdict(report, 'r1')).toEqual({
      agrees: true,
      text: 'the new reducer (abcdef012345) agrees on all 7 decisions',
    });
  });

  it('differs on a divergent run at its first divergent seq, with the first difference', () => {
    const report = {
      artifact,
      runs: [{ run_id: 'r1', result: 'diverged', deliveries: 3, event_seq: 14, diff: ['state_rev: 3 → 4'] }],
    };
    expect(checkVerdict(report, 'r1')).toEqual({
      agrees: false,
      text: 'the new reducer (abcdef012345) decides differently at event #14: state_rev: 3 → 4',
    });
  });

  it('knows nothing of a skipped run or one the answer does not hold', () => {
    const report = { artifact, runs: [{ run_id: 'r1', result: 'skipped', deliveries: 0, reason: 'a fork' }] };
    expect(checkVerdict(report, 'r1')).toEqual({ agrees: null, text: 'not checked: a fork' });
    expect(checkVerdict(report, 'r2').agrees).toBeNull();
  });
});
