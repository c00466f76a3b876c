import { readFileSync } from 'node:fs';
import { runWorld } from './run-model.ts';
const [ex] = JSON.parse(readFileSync('/tmp/ex.json', 'utf8'));
const t = runWorld(ex.start, ex.actions);
t.steps.forEach((s, i) => {
  const r = s.result ? (s.result.ok ? 'ok' : s.result.code) : s.control ? s.control.decision.kind + ('reason' in s.control.decision ? ':' + s.control.decision.reason : '') : '-';
  const a = s.action.t === 'control' ? `control ${JSON.stringify(s.action.spec)}` : s.action.t;
  console.log(i, a, s.fn, r, `${s.before.status}->${s.after.status}`, 'ev=' + s.events.map((e) => e.kind).join(','), 'op=' + (s.after.operation ? `${s.after.operation.kind}${s.after.operation.started_at === null ? '(pending)' : '(flight)'}` : '-'), 'req=' + s.after.open_requests.map((r) => r.kind).join(','), 'inbox=' + s.after.inbox.length, 'steers=' + s.after.queued_steers.length, 'epoch=' + s.after.epoch, 'lease=' + (s.after.lease?.owner ?? '-'));
});
