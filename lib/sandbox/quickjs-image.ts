/**
 * Memory images of QuickJS instances: the bytes of an instance's WebAssembly memory captured
 * right after a reducer's module has loaded, written back after every call, so every call starts
 * from the same state (the module evaluated, the deterministic prelude installed, nothing a
 * previous call left behind). This replaces a fresh runtime and context per call (about 1 ms:
 * context 0.25, prelude 0.3-0.5, module 0.25, disposal 0.2) by a copy of the live part of the
 * memory (about 0.05 ms). See docs/contracts/reducer.md, "The deterministic execution policy".
 *
 * What is live: QuickJS is built with emscripten, whose memory is laid out as static data,
 * then the C stack (growing down), then the heap (growing up to sbrk's break). An image holds
 * the static data (`[0, staticEnd)`) and everything from the top of the stack the load used to
 * the break (`[highStart, break)`); after a call the same ranges are written back and whatever
 * the call allocated past the old break is zeroed again (the allocator takes memory past the
 * break to be zero). The C stack below the load's deepest frame is left as the call left it,
 * as it always was between calls: C code never reads a stack slot it did not write.
 *
 * The break is read from the sbrk variable in the module's static data; its address is found
 * once per process by `probeLayout` (a throwaway instance allocates 4 MiB and the one static word
 * that moves past the data is the break). Where the probe finds no single such word (another
 * build of QuickJS), images hold the whole memory instead: slower (about 1.5 ms a call), as
 * exact.
 */
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import type { WasmMemory } from './wasm-api.ts';

/** Where an instance of this QuickJS build keeps its state (byte offsets into its memory). */
export interface ImageLayout {
  /** Address of emscripten's sbrk break, a little-endian u32 in the static data. */
  breakAddress: number;
  /** End of the static data written back on every call (the data and BSS lie below it). */
  staticEnd: number;
}

/** A loaded QuickJS instance's memory image. */
export interface MemoryImage {
  /**
   * Writes the image back into the memory. Returns false (and writes nothing) when the break
   * read from the memory is not believable (outside the heap): the instance must be dropped.
   */
  restore(): boolean;
  /** Bytes the image holds (what one restore copies, before zeroing new allocations). */
  readonly bytes: number;
}

/** Bytes the probe allocates to move the break (well past any free block of a fresh heap). */
const PROBE_BYTES = 4 * 1024 * 1024;
/** Static data restored on every call: QuickJS's data and BSS are about 130 KiB. */
const STATIC_BYTES = 1024 * 1024;
/** Granularity of the part of the stack an image holds. */
const BLOCK_BYTES = 64 * 1024;

/**
 * Finds the layout of the QuickJS build behind `instance` (a fresh instance, disposed of by the
 * caller afterwards: the probe leaves a runtime and a 4 MiB string in it). Returns null when the
 * build does not look as expected (no single sbrk candidate, static data larger than
 * STATIC_BYTES): images then hold the whole memory.
 */
export function probeLayout(module: QuickJSWASMModule, memory: WasmMemory): ImageLayout | null {
  const runtime = module.newRuntime();
  const context = runtime.newContext();
  void context.global;
  const before = new Uint32Array(memory.buffer.slice(0));
  const highest = highestNonZeroWord(before) * 4;
  const grown = context.evalCode(`globalThis.probe = 'x'.repeat(${PROBE_BYTES})`);
  if (grown.error) return null;
  const after = new Uint32Array(memory.buffer);
  const highestAfter = highestNonZeroWord(after) * 4;
  const candidates: number[] = [];
  for (let i = 0; i * 4 < STATIC_BYTES && i < before.length; i++) {
    const old = before[i] ?? 0;
    const now = after[i] ?? 0;
    const breakBefore = old > highest && old <= highest + BLOCK_BYTES;
    const breakAfter = now >= old + PROBE_BYTES && now > highestAfter && now <= after.byteLength;
    if (breakBefore && breakAfter) candidates.push(i * 4);
  }
  if (candidates.length !== 1) return null;
  const layout = { breakAddress: candidates[0] ?? 0, staticEnd: STATIC_BYTES };
  const firstAboveStatic = firstNonZeroWord(before, STATIC_BYTES / 4) * 4;
  return firstAboveStatic >= STATIC_BYTES + BLOCK_BYTES ? layout : null;
}

/**
 * Captures `memory` as it is now (call it right after the reducer's module loaded). With a null
 * layout the image is the whole memory.
 */
export function captureImage(memory: WasmMemory, layout: ImageLayout | null): MemoryImage {
  if (layout === null) return wholeImage(memory);
  const words = new Uint32Array(memory.buffer);
  const heapBreak = words[layout.breakAddress >>> 2] ?? 0;
  const firstLive = firstNonZeroWord(words, layout.staticEnd >>> 2) * 4;
  const highStart = Math.max(layout.staticEnd, firstLive - (firstLive % BLOCK_BYTES));
  if (!(heapBreak > highStart && heapBreak <= memory.buffer.byteLength)) return wholeImage(memory);
  const bytes = new Uint8Array(memory.buffer);
  const low = bytes.slice(0, layout.staticEnd);
  const high = bytes.slice(highStart, heapBreak);
  return {
    bytes: low.byteLength + high.byteLength,
    restore(): boolean {
      const now = new Uint8Array(memory.buffer);
      const breakNow = new Uint32Array(memory.buffer)[layout.breakAddress >>> 2] ?? 0;
      if (!(breakNow > highStart && breakNow <= now.byteLength)) return false;
      now.set(low, 0);
      now.set(high, highStart);
      if (breakNow > heapBreak) now.fill(0, heapBreak, breakNow);
      return true;
    },
  };
}

function wholeImage(memory: WasmMemory): MemoryImage {
  const whole = new Uint8Array(memory.buffer.slice(0));
  return {
    bytes: whole.byteLength,
    restore(): boolean {
      const now = new Uint8Array(memory.buffer);
      now.set(whole, 0);
      if (now.byteLength > whole.byteLength) now.fill(0, whole.byteLength);
      return true;
    },
  };
}

function highestNonZeroWord(words: Uint32Array): number {
  for (let i = words.length - 1; i >= 0; i--) if (words[i] !== 0) return i;
  return 0;
}

function firstNonZeroWord(words: Uint32Array, from: number): number {
  for (let i = from; i < words.length; i++) if (words[i] !== 0) return i;
  return words.length;
}
