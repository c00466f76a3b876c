/** Python's text forms the airline tools print (lib/replay/airline/python-text.ts); expected values from CPython 3.11. */
import { describe, expect, it } from 'vitest';
import { pythonFloat, pythonJson, pythonRound2 } from '../../lib/replay/airline/python-text.ts';

describe('Python text forms', () => {
  it.each([
    [1, '1.0'],
    [0.1, '0.1'],
    [1e16, '1e+16'],
    [1.5e16, '1.5e+16'],
    [9999999999999998, '9999999999999998.0'],
    [1e-4, '0.0001'],
    [1e-5, '1e-05'],
    [1.5e-7, '1.5e-07'],
    [-0, '-0.0'],
    [123456.789, '123456.789'],
    [1e22, '1e+22'],
    [5e-324, '5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [0.1 + 0.2, '0.30000000000000004'],
    [Number.POSITIVE_INFINITY, 'inf'],
  ])('repr(%s) is %s', (x, text) => {
    expect(pythonFloat(x)).toBe(text);
  });

  it('writes json.dumps text: spaced separators, ASCII only, integers without a fraction', () => {
    expect(pythonJson({ a: 'é😀\u007f\u0001\n"\\', b: [1, 2.5, null, true] })).toBe(
      '{"a": "\\u00e9\\ud83d\\ude00\\u007f\\u0001\\n\\"\\\\", "b": [1, 2.5, null, true]}',
    );
  });

  it('keeps insertion order, also for maps and integer-like keys', () => {
    expect(
      pythonJson(
        new Map([
          ['b', 1],
          ['429815', 2],
          ['a', 3],
        ]),
      ),
    ).toBe('{"b": 1, "429815": 2, "a": 3}');
  });

  it.each([
    [0.125, 0.12],
    [0.375, 0.38],
    [0.625, 0.62],
    [0.875, 0.88],
    [2.675, 2.67],
    [1.005, 1],
    [-2.5, -2.5],
    [1.125, 1.12],
    [-0.125, -0.12],
  ])('round(%s, 2) is %s (exact ties to even)', (x, rounded) => {
    expect(pythonRound2(x)).toBe(rounded);
  });
});
