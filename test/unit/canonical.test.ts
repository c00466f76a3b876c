import { readFile } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  CanonicalJsonError,
  canonicalByteLength,
  canonicalJson,
  digestOf,
  jsonDepth,
  MAX_JSON_DEPTH,
  sha256Hex,
} from '../../lib/core/canonical.ts';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and drops whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('orders keys by UTF-16 code units, not by locale', () => {
    expect(canonicalJson({ é: 1, z: 2, Z: 3, '10': 4, '9': 5 })).toBe('{"10":4,"9":5,"Z":3,"z":2,"é":1}');
  });

  it('writes numbers in the ECMAScript shortest form of RFC 8785', () => {
    expect(canonicalJson([1.0, -0, 1e21, 0.000001, 1e-7, 123.456])).toBe('[1,0,1e+21,0.000001,1e-7,123.456]');
  });

  it('keeps non-ASCII characters raw and escapes only what JSON requires', () => {
    expect(canonicalJson({ s: 'é€😀\n"\\\u0001' })).toBe('{"s":"é€😀\\n\\"\\\\\\u0001"}');
  });

  it('omits undefined object properties and writes undefined array elements as null', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
  });

  it('gives the same text whatever the insertion order', () => {
    expect(canonicalJson({ x: 1, y: { p: true, q: 'v' } })).toBe(
      canonicalJson({ y: { q: 'v', p: true }, x: 1 }),
    );
  });

  it.each([
    ['undefined at top level', undefined],
    ['a function at top level', () => 1],
    ['NaN', { n: Number.NaN }],
    ['Infinity', [Number.POSITIVE_INFINITY]],
    ['a BigInt', { n: 10n }],
    ['a lone surrogate', { s: '\uD800' }],
  ])('throws CanonicalJsonError (code not_json) for %s', (_label, value) => {
    expect(() => canonicalJson(value)).toThrow(CanonicalJsonError);
    try {
      canonicalJson(value);
    } catch (error) {
      expect(error).toMatchObject({ name: 'CanonicalJsonError', code: 'not_json' });
    }
  });

  it('throws CanonicalJsonError for a cycle', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(CanonicalJsonError);
  });
});

describe('sha256Hex', () => {
  it('matches the FIPS 180-2 test vectors', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('hashes a string as its UTF-8 bytes', () => {
    expect(sha256Hex('é')).toBe(sha256Hex(new Uint8Array([0xc3, 0xa9])));
  });
});

describe('digestOf', () => {
  it('is sha256 of the canonical JSON, independent of key order', () => {
    const a = { tool: '/lib/myapp/refund', version: '1.0.0', args: { order: 42, amount: 10 } };
    const b = { args: { amount: 10, order: 42 }, version: '1.0.0', tool: '/lib/myapp/refund' };
    expect(digestOf(a)).toBe(digestOf(b));
    expect(digestOf(a)).toBe(sha256Hex(canonicalJson(a)));
    expect(digestOf(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('differs when a value differs', () => {
    expect(digestOf({ amount: 10 })).not.toBe(digestOf({ amount: 11 }));
  });
});

describe('canonicalByteLength', () => {
  it('counts UTF-8 bytes of the canonical text, not UTF-16 units', () => {
    expect(canonicalByteLength({ s: 'a' })).toBe(9);
    expect(canonicalByteLength({ s: 'é' })).toBe(10);
    expect(canonicalByteLength({ s: '😀' })).toBe(12);
    expect(canonicalByteLength({ b: 1, a: 2 })).toBe('{"a":2,"b":1}'.length);
  });
});

describe('purity of the hashing and canonicalization dependencies (lib/core imports no node:*)', () => {
  /** Every module reachable by relative imports from `entry`, with the bare specifiers each imports. */
  async function importGraph(entry: string): Promise<{ files: string[]; bare: string[] }> {
    const files: string[] = [];
    const bare = new Set<string>();
    const queue = [entry];
    while (queue.length > 0) {
      const file = queue.pop();
      if (file === undefined || files.includes(file)) continue;
      files.push(file);
      const source = await readFile(file, 'utf8');
      const specifiers = [
        ...source.matchAll(/\bfrom\s*['"]([^'"]+)['"]/g),
        ...source.matchAll(/\bimport\s*\(?\s*['"]([^'"]+)['"]/g),
        ...source.matchAll(/\brequire\s*\(\s*['"]([^'"]+)['"]/g),
      ].map((match) => match[1] ?? '');
      for (const specifier of specifiers) {
        if (specifier.startsWith('.')) queue.push(resolve(dirname(file), specifier));
        else bare.add(specifier);
      }
    }
    return { files, bare: [...bare] };
  }

  it('canonicalize imports no module at all', async () => {
    const graph = await importGraph(fileURLToPath(import.meta.resolve('canonicalize')));
    expect(graph.files).toHaveLength(1);
    expect(graph.bare).toEqual([]);
  });

  it('finds a Node built-in when a module imports one (the check can fail)', async () => {
    const graph = await importGraph(fileURLToPath(import.meta.url));
    expect(graph.bare.filter((specifier) => isBuiltin(specifier))).toContain('node:fs/promises');
  });

  it('@noble/hashes sha2 and utils reach no Node built-in and no other package', async () => {
    for (const entry of ['@noble/hashes/sha2.js', '@noble/hashes/utils.js']) {
      const graph = await importGraph(fileURLToPath(import.meta.resolve(entry)));
      expect(graph.files.length).toBeGreaterThan(0);
      // Bare specifiers only appear in the package's own doc examples (`@noble/hashes/...`).
      expect(graph.bare.filter((specifier) => isBuiltin(specifier))).toEqual([]);
      expect(graph.bare.filter((specifier) => !specifier.startsWith('@noble/hashes/'))).toEqual([]);
    }
  });
});

describe('jsonDepth', () => {
  const nest = (n: number): unknown => {
    let v: unknown = 'x';
    for (let i = 0; i < n; i += 1) v = i % 2 === 0 ? [v] : { k: v };
    return v;
  };

  it('counts objects and arrays from 1, scalars as 0, without recursion even 100 000 deep', () => {
    expect(jsonDepth('s')).toBe(0);
    expect(jsonDepth({})).toBe(1);
    expect(jsonDepth({ a: [1, { b: null }] })).toBe(3);
    expect(jsonDepth(nest(MAX_JSON_DEPTH))).toBe(MAX_JSON_DEPTH);
    expect(jsonDepth(nest(100_000))).toBe(100_000);
  });

  it('stops counting once past the limit', () => {
    expect(jsonDepth(nest(100_000), MAX_JSON_DEPTH)).toBe(MAX_JSON_DEPTH + 1);
  });
});
