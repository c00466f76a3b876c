/**
 * Sealed listing cursors (lib/engine/list-cursor.ts): a cursor opens only under the key, the
 * caller and the status it was sealed for, shows nothing of the position inside, and every
 * position the store writes seals to one length. docs/guides/who-may-do-what.md.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Caller } from '../../lib/core/authority.ts';
import { openCursor, sealCursor } from '../../lib/engine/list-cursor.ts';

const key = randomBytes(32);
const bob: Caller = { principal: { kind: 'user', id: 'bob' } };
const position = Buffer.from(JSON.stringify({ created_at: 1_700_000_000_000, run_id: 'run_abc' })).toString(
  'base64url',
);

describe('sealed listing cursors', () => {
  it('open to the position for the same key, caller and status only', () => {
    const sealed = sealCursor(key, bob, 'waiting', position);
    expect(openCursor(key, bob, 'waiting', sealed)).toBe(position);
    expect(openCursor(randomBytes(32), bob, 'waiting', sealed)).toBeNull();
    expect(openCursor(key, bob, 'running', sealed)).toBeNull();
    for (const other of [
      { principal: { kind: 'user', id: 'alice' } },
      { principal: { kind: 'agent', id: 'planner', on_behalf_of: 'bob' } },
      { principal: { kind: 'system', id: 'ops' } },
      { principal: { kind: 'user', id: 'bob' }, admin: true, capability: 'x' },
      { principal: { kind: 'user', id: 'bob' }, capability: 'x' },
    ] as Caller[]) {
      const opened = openCursor(key, other, 'waiting', sealed);
      // Only the same principal listing through the same index (an admin reads another) opens it.
      const same = other.principal.id === 'bob' && other.principal.kind === 'user' && other.admin !== true;
      expect(opened).toBe(same ? position : null);
    }
    expect(openCursor(key, bob, 'waiting', sealed.slice(0, -2))).toBeNull();
    expect(openCursor(key, bob, 'waiting', `${sealed}A`)).toBeNull();
    expect(openCursor(key, bob, 'waiting', position)).toBeNull();
  });

  it('show nothing of the position and have one length for every position the store writes', () => {
    const longest = Buffer.from(
      JSON.stringify({ created_at: Number.MAX_SAFE_INTEGER, run_id: `run_${'f'.repeat(32)}` }),
    ).toString('base64url');
    const a = sealCursor(key, bob, 'waiting', position);
    const b = sealCursor(key, bob, 'waiting', longest);
    expect(a.length).toBe(b.length);
    expect(sealCursor(key, bob, 'waiting', position)).not.toBe(a);
    expect(Buffer.from(a, 'base64url').toString('latin1')).not.toContain('run_abc');
    expect(Buffer.from(a, 'base64url').toString('latin1')).not.toContain(position);
  });
});
