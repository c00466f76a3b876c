/**
 * Source of the worker thread that runs WebAssembly reducers. It is a string, started with
 * `new Worker(source, {eval: true})`, so bundling the host (esbuild for Lambda) needs no extra
 * entry point. The worker receives `{id, module, handler, request}` (a compiled module, an
 * export name, the UTF-8 request bytes), instantiates the module with no imports, calls the
 * ABI (README, "WebAssembly ABI") and answers `{id, kind: 'output', bytes}` or
 * `{id, kind: 'unavailable', reason}`, after `{id, started: true}` (serial-worker.ts). A fresh instance per call: no state survives a call.
 * The host enforces the deadline by terminating the worker.
 */
export const WASM_WORKER_SOURCE = `'use strict';
// getBuiltinModule, not require: an eval worker inherits --input-type=module when its parent has it.
const { parentPort } = process.getBuiltinModule('node:worker_threads');

function abi(detail) {
  return { kind: 'unavailable', reason: 'wasm_abi_violation: ' + detail };
}

function classify(error) {
  const message = error && typeof error.message === 'string' ? error.message : String(error);
  if (error instanceof RangeError && /call stack/i.test(message)) return 'stack_overflow: ' + message;
  if (error instanceof WebAssembly.RuntimeError) return 'wasm_trap: ' + message;
  return 'wasm_trap: ' + (error && error.name ? error.name + ': ' : '') + message;
}

function call({ module, handler, request }) {
  const instance = new WebAssembly.Instance(module, {});
  const { memory, alloc } = instance.exports;
  const fn = instance.exports[handler];
  if (typeof fn !== 'function') return { kind: 'unavailable', reason: 'handler_missing: no exported function ' + JSON.stringify(handler) };
  const ptr = alloc(request.length);
  if (typeof ptr !== 'number') return abi('alloc must return an i32');
  const inPtr = ptr >>> 0;
  if (inPtr + request.length > memory.buffer.byteLength) return abi('alloc returned a range outside memory');
  new Uint8Array(memory.buffer, inPtr, request.length).set(request);
  const packed = fn(inPtr | 0, request.length);
  if (typeof packed !== 'bigint') return abi('the handler must return an i64 (ptr << 32 | len)');
  const bits = BigInt.asUintN(64, packed);
  const outPtr = Number(bits >> 32n);
  const outLen = Number(bits & 0xffffffffn);
  const buffer = memory.buffer;
  if (outPtr + outLen > buffer.byteLength) return abi('the response range lies outside memory');
  return { kind: 'output', bytes: new Uint8Array(buffer, outPtr, outLen).slice() };
}

parentPort.on('message', (message) => {
  parentPort.postMessage({ id: message.id, started: true });
  let reply;
  try {
    reply = call(message);
  } catch (error) {
    reply = { kind: 'unavailable', reason: classify(error) };
  }
  reply.id = message.id;
  if (reply.kind === 'output') parentPort.postMessage(reply, [reply.bytes.buffer]);
  else parentPort.postMessage(reply);
});
parentPort.postMessage({ ready: true });
`;
