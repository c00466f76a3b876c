import fc from 'fast-check';
import { actionArb, runWorld, startArb } from './run-model.ts';
const scenario = fc.record({ start: startArb, actions: fc.array(actionArb, { minLength: 1, maxLength: 60, size: 'max' }) });
const samples = fc.sample(scenario, { numRuns: 300, seed: 42 });
const stats = new Map<string, number>();
const inc = (k: string) => stats.set(k, (stats.get(k) ?? 0) + 1);
let len = 0;
for (const { start, actions } of samples) {
  const t = runWorld(start, actions);
  len += t.steps.length;
  inc('final:' + t.final.status);
  for (const s of t.steps) {
    if (s.result) inc(`${s.fn}:${s.result.ok ? 'ok' : s.result.code}`);
    if (s.control) inc(`control:${s.control.control.command}:${s.control.decision.kind}${s.control.decision.kind==='rejected'?':'+s.control.decision.reason:''}`);
    for (const e of s.events) inc('ev:' + e.kind);
    if (s.reducer && s.reducer.validation && !s.reducer.validation.ok) inc('refused:' + s.reducer.validation.code);
  }
}
console.log(len, [...stats.entries()].sort().map(([k, v]) => `${k} ${v}`).join('\n'));
