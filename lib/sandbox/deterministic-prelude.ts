/**
 * The script QuickJS evaluates in a reducer's context, before its module, when the reducer is
 * loaded (quickjs-reducer.ts; every call then starts from that state): it installs
 * the deterministic execution policy. docs/contracts/reducer.md, "The deterministic
 * execution policy" (the clock reads the epoch and randomness is a fixed sequence).
 *
 * - `Date`: `Date.now()`, `new Date()` and `Date()` read the epoch (0). Local-time accessors
 *   and setters, `getTimezoneOffset` and the `toString` family are mapped to their UTC forms,
 *   and the multi-argument constructor takes its components as UTC, so no answer depends on
 *   the host's time zone. `Date.parse` of a string without a zone designator still follows the
 *   host zone (UTC on Lambda): write timestamps with a `Z`.
 * - `Math.random()`: xorshift32 seeded with MATH_RANDOM_SEED, restarted in every context, so
 *   every call sees the same sequence. The sequence is part of the runtime version.
 * - `WeakRef` and `FinalizationRegistry` are removed (their behaviour follows the collector).
 * - Nothing is added: QuickJS has no host functions (no fetch, require, process, console,
 *   setTimeout, raisin); naming one throws ReferenceError inside the reducer.
 *
 * Kept short on purpose: QuickJS compiles it at every load of a reducer (about 0.25 ms).
 */

/** Seed of the Math.random sequence ("RAIS"). Changing it changes replays: treat it as a runtime version. */
export const MATH_RANDOM_SEED = 0x52414953;

export const DETERMINISTIC_PRELUDE = `(() => {
'use strict';
const R = Date, P = R.prototype, vo = P.valueOf, iso = P.toISOString, utc = P.toUTCString;
const S = function Date(...a) {
  if (new.target === undefined) return utc.call(new R(0));
  return Reflect.construct(R, a.length === 0 ? [0] : a.length === 1 ? a : [R.UTC(...a)], new.target);
};
const method = (value) => ({ value, writable: true, configurable: true });
Object.defineProperties(S, {
  prototype: { value: P, writable: false },
  length: { value: 7 },
  now: method(() => 0),
  parse: method(R.parse),
  UTC: method(R.UTC),
});
P.constructor = S;
for (const k of ['FullYear', 'Month', 'Date', 'Day', 'Hours', 'Minutes', 'Seconds', 'Milliseconds']) {
  P['get' + k] = P['getUTC' + k];
  if (k !== 'Day') P['set' + k] = P['setUTC' + k];
}
P.getTimezoneOffset = function () { const t = vo.call(this); return t !== t ? NaN : 0; };
P.toString = P.toLocaleString = utc;
P.toDateString = P.toLocaleDateString = function () {
  return vo.call(this) !== vo.call(this) ? 'Invalid Date' : iso.call(this).slice(0, 10);
};
P.toTimeString = P.toLocaleTimeString = function () {
  return vo.call(this) !== vo.call(this) ? 'Invalid Date' : iso.call(this).slice(11, 23) + 'Z';
};
globalThis.Date = S;
let s = ${MATH_RANDOM_SEED};
Math.random = function random() { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; return (s >>> 0) / 4294967296; };
delete globalThis.WeakRef;
delete globalThis.FinalizationRegistry;
})()`;
