/**
 * Source of the worker thread that runs Starlark reducers. It is a string, started with
 * `new Worker(source, {eval: true})` like the WebAssembly worker, so bundling needs no extra
 * entry point. `workerData` carries the compiled Starlark runtime (a Go js/wasm module, its
 * memory capped), Go's own `wasm_exec.js` glue as text, the runtime's argv, the random seed
 * and the instance cache size.
 *
 * The glue is evaluated once per Go instance with its own globals (never the worker's):
 * - `fs`: a file system that only carries frames: stdin (fd 0) is fed the frames the host
 *   sends, stdout (fd 1) collects the runtime's answers, stderr (fd 2) keeps the first
 *   STDERR_BYTES of the Go runtime's fatal messages; every other call fails with ENOSYS;
 * - `performance.now()` and `Date`: a clock that starts at the epoch and advances 1 µs per
 *   reading, whatever the host's time;
 * - `crypto.getRandomValues`: xorshift32 from the fixed seed, restarted per instance;
 * - `setTimeout`: timers are recorded and never fire (the runtime sleeps on none; its
 *   background scavenger would only wake against a clock that does not move);
 * - `process`: no pid, no uid, no cwd; `console`: dropped.
 *
 * Messages `{id, hash, source, handler, request, steps}` (UTF-8 bytes for source and
 * request) are acknowledged at once with `{id, started: true}` (the host's deadline starts
 * there) and answered with `{id, kind: 'answered', bytes}`, `{id, kind: 'threw', message}` or
 * `{id, kind: 'unavailable', reason}`. One Go instance per artifact hash (least recently used
 * dropped past `maxInstances`), loaded once (its globals frozen), then a fresh Starlark thread
 * per call. A spare instance, started before `{ready: true}` and again after each call that
 * used it, keeps the runtime's start-up (tens of ms) off the deadline. An instance whose Go
 * runtime exited (out of memory, stack overflow) or trapped is dropped.
 */
export const STARLARK_WORKER_SOURCE = `'use strict';
// getBuiltinModule, not require: an eval worker inherits --input-type=module when its parent has it.
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const { module, glue, argv, seed, maxInstances } = workerData;
const STDERR_BYTES = 4096;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const defineGo = new Function(
  'globalThis', 'fs', 'performance', 'crypto', 'Date', 'console', 'setTimeout', 'clearTimeout',
  glue + '\\nreturn globalThis.Go;',
);

function enosys() {
  const error = new Error('not implemented');
  error.code = 'ENOSYS';
  return error;
}

function createInstance() {
  const io = { input: new Uint8Array(0), offset: 0, pendingRead: null, output: [], stderr: [], stderrBytes: 0 };
  const feed = () => {
    const read = io.pendingRead;
    if (read === null || io.offset >= io.input.length) return;
    io.pendingRead = null;
    const n = Math.min(read.length, io.input.length - io.offset);
    read.buffer.set(io.input.subarray(io.offset, io.offset + n), read.offset);
    io.offset += n;
    read.callback(null, n);
  };
  const writeSync = (fd, bytes) => {
    if (fd === 1) io.output.push(bytes.slice());
    else if (fd === 2) {
      const room = STDERR_BYTES - io.stderrBytes;
      if (room > 0) io.stderr.push(bytes.slice(0, room));
      io.stderrBytes += Math.min(room, bytes.length);
    } else throw enosys();
    return bytes.length;
  };
  const refuse = (...args) => args[args.length - 1](enosys());
  const fs = {
    constants: { O_WRONLY: -1, O_RDWR: -1, O_CREAT: -1, O_TRUNC: -1, O_APPEND: -1, O_EXCL: -1 },
    writeSync,
    write(fd, buffer, offset, length, position, callback) {
      if (offset !== 0 || length !== buffer.length || position !== null) return callback(enosys());
      let n;
      try { n = writeSync(fd, buffer); } catch (error) { return callback(error); }
      callback(null, n);
    },
    read(fd, buffer, offset, length, position, callback) {
      if (fd !== 0 || position !== null) return callback(enosys());
      io.pendingRead = { buffer, offset, length, callback };
      feed();
    },
    fsync(fd, callback) { callback(null); },
  };
  for (const name of ['chmod', 'chown', 'close', 'fchmod', 'fchown', 'fstat', 'ftruncate', 'lchown', 'link',
    'lstat', 'mkdir', 'open', 'readdir', 'readlink', 'rename', 'rmdir', 'stat', 'symlink', 'truncate',
    'unlink', 'utimes']) fs[name] = refuse;
  const fail = () => { throw enosys(); };
  const process = {
    pid: -1, ppid: -1,
    getuid: () => -1, getgid: () => -1, geteuid: () => -1, getegid: () => -1,
    getgroups: fail, umask: fail, cwd: fail, chdir: fail,
  };
  let ticks = 0;
  const now = () => (ticks += 1) / 1000;
  class EpochDate {
    static now() { return now(); }
    getTime() { return now(); }
    getTimezoneOffset() { return 0; }
  }
  let s = seed;
  const crypto = {
    getRandomValues(bytes) {
      for (let i = 0; i < bytes.length; i++) {
        s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
        bytes[i] = s & 0xff;
      }
      return bytes;
    },
  };
  const quiet = { log() {}, warn() {}, error() {} };
  let nextTimer = 1;
  const performance = { now };
  const globals = Object.assign(Object.create(null), {
    fs, process, crypto, performance, Date: EpochDate, Object, Array, Uint8Array, TextEncoder, TextDecoder,
  });
  const Go = defineGo(globals, fs, performance, crypto, EpochDate, quiet, () => nextTimer++, () => undefined);
  const go = new Go();
  go.argv = argv;
  go.env = {};
  go.exit = () => undefined;
  const wasm = new WebAssembly.Instance(module, go.importObject);
  go.run(wasm).catch(() => undefined);
  if (go.exited || io.pendingRead === null) {
    throw new Error('the Starlark runtime did not start: ' + stderrText(io));
  }
  return { go, io, feed };
}

function stderrText(io) {
  const bytes = new Uint8Array(io.stderrBytes);
  let at = 0;
  for (const chunk of io.stderr) { bytes.set(chunk, at); at += chunk.length; }
  return decoder.decode(bytes).trim();
}

function frame(header, payload) {
  const head = encoder.encode(header + ' ' + payload.length + '\\n');
  const bytes = new Uint8Array(head.length + payload.length);
  bytes.set(head);
  bytes.set(payload, head.length);
  return bytes;
}

/** Sends one frame and reads the answer frame: {status, payload}, or {died: reason}. */
function exchange(instance, bytes) {
  const { go, io, feed } = instance;
  if (io.pendingRead === null) return { died: 'sandbox_fault: the Starlark runtime is not reading' };
  io.input = bytes;
  io.offset = 0;
  io.output = [];
  try {
    feed();
  } catch (error) {
    return { died: classifyThrown(error) };
  }
  if (go.exited) return { died: classifyExit(stderrText(io)) };
  let size = 0;
  for (const chunk of io.output) size += chunk.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of io.output) { out.set(chunk, at); at += chunk.length; }
  const newline = out.indexOf(10);
  const header = newline < 0 ? [] : decoder.decode(out.subarray(0, newline)).split(' ');
  const length = Number(header[1]);
  if (header.length !== 2 || !Number.isSafeInteger(length) || newline + 1 + length !== out.length) {
    return { died: 'sandbox_fault: the Starlark runtime wrote a malformed frame' };
  }
  return { status: header[0], payload: out.subarray(newline + 1) };
}

function classifyExit(stderr) {
  const first = stderr.split('\\n').slice(0, 3).join(' ');
  if (/stack overflow|stack exceeds/.test(stderr)) return 'stack_overflow: ' + first;
  if (/out of memory/.test(stderr)) return 'out_of_memory: ' + first;
  return 'sandbox_fault: the Starlark runtime exited: ' + first;
}

function classifyThrown(error) {
  const message = error && typeof error.message === 'string' ? error.message : String(error);
  if (error instanceof RangeError && /call stack/i.test(message)) return 'stack_overflow: ' + message;
  if (error instanceof WebAssembly.RuntimeError) return 'wasm_trap: ' + message;
  return 'sandbox_fault: ' + (error && error.name ? error.name + ': ' : '') + message;
}

function toReply(answer) {
  if (answer.died) return { kind: 'unavailable', reason: answer.died };
  const text = () => decoder.decode(answer.payload);
  if (answer.status === 'answered') return { kind: 'answered', bytes: answer.payload.slice() };
  if (answer.status === 'threw') return { kind: 'threw', message: text() };
  if (answer.status === 'unavailable') return { kind: 'unavailable', reason: text() };
  return { kind: 'unavailable', reason: 'sandbox_fault: unexpected answer ' + answer.status };
}

const instances = new Map();
let spare = null;

function prepareSpare() {
  if (spare !== null) return;
  try { spare = createInstance(); } catch { spare = null; }
}

function serve({ hash, source, handler, request, steps }) {
  let instance = instances.get(hash);
  if (instance !== undefined) {
    instances.delete(hash);
  } else {
    instance = spare ?? createInstance();
    spare = null;
    const loaded = exchange(instance, frame('load ' + steps, source));
    if (loaded.died || loaded.status !== 'loaded') return toReply(loaded);
    while (instances.size >= maxInstances) instances.delete(instances.keys().next().value);
  }
  const answer = exchange(instance, frame('call ' + steps + ' ' + handler, request));
  if (!answer.died) instances.set(hash, instance);
  return toReply(answer);
}

parentPort.on('message', (message) => {
  parentPort.postMessage({ id: message.id, started: true });
  let reply;
  try {
    reply = serve(message);
  } catch (error) {
    reply = { kind: 'unavailable', reason: classifyThrown(error) };
  }
  reply.id = message.id;
  if (reply.kind === 'answered') parentPort.postMessage(reply, [reply.bytes.buffer]);
  else parentPort.postMessage(reply);
  if (spare === null) setImmediate(prepareSpare);
});

spare = createInstance();
parentPort.postMessage({ ready: true });
`;
