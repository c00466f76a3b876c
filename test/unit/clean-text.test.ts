/**
 * Identifiers hold no control character and no invisible one (lib/contracts/clean-text.ts): the
 * look-alikes an adversarial pass used (zero-width characters, the byte-order mark, the soft
 * hyphen, a Mongolian vowel separator, an interlinear annotation, a musical format character)
 * are refused like the bidirectional marks, and so are compatibility characters (a fullwidth
 * colon, a no-break space) and lone surrogates, while letters of any script and emoji are not.
 */
import { describe, expect, it } from 'vitest';
import { cleanId, firstUnsafeIdChar } from '../../lib/contracts/clean-text.ts';
import { CallerSubject } from '../../lib/contracts/common.ts';
import { WorkspaceGrant } from '../../lib/contracts/registry.ts';

describe('identifier characters', () => {
  it('refuses every invisible format character and separator, naming it and its index', () => {
    for (const [char, name] of [
      ['\u200b', 'U+200B'],
      ['\u200c', 'U+200C'],
      ['\u200d', 'U+200D'],
      ['\u2060', 'U+2060'],
      ['\ufeff', 'U+FEFF'],
      ['\u00ad', 'U+00AD'],
      ['\u180e', 'U+180E'],
      ['\ufff9', 'U+FFF9'],
      ['\u{1d173}', 'U+1D173'],
      ['\u{e0041}', 'U+E0041'],
      ['\u202e', 'U+202E'],
      ['\u2028', 'U+2028'],
      ['\u0001', 'U+0001'],
    ] as const) {
      expect(firstUnsafeIdChar(`/shared${char}x`), name).toMatchObject({ index: 7, char: name });
      const parsed = cleanId(64).safeParse(`/shared${char}`);
      expect(parsed.success, name).toBe(false);
      expect(parsed.error?.issues[0]).toMatchObject({ params: { code: 'control_character' } });
    }
  });

  it('refuses a compatibility character, naming what it reads as, and a lone surrogate', () => {
    for (const [text, char, readsAs] of [
      ['user\uff1acarol', 'U+FF1A', ':'],
      ['/p\u00a0', 'U+00A0', ' '],
      ['\uff0flib/raisin', 'U+FF0F', '/'],
      ['/\ufb01le', 'U+FB01', 'fi'],
      ['/\u{1d518}ni', 'U+1D518', 'U'],
    ] as const) {
      expect(firstUnsafeIdChar(text), text).toMatchObject({ char, reads_as: readsAs });
      const parsed = cleanId(64).safeParse(text);
      expect(parsed.success, text).toBe(false);
      expect(parsed.error?.issues[0]?.message).toContain(`reads as ${JSON.stringify(readsAs)}`);
    }
    expect(firstUnsafeIdChar('run_\ud800')).toMatchObject({ index: 4, char: 'U+D800', lone_surrogate: true });
    expect(cleanId(64).safeParse('run_\udc00x').success).toBe(false);
  });

  it('keeps letters of any script, astral characters and emoji', () => {
    for (const text of ['/tickets/7', '/café/Ünïcode', '/日本語/パス', '/Ελληνικά', '/emoji/🚀', '/𠀋𠀌']) {
      expect(firstUnsafeIdChar(text), text).toBeNull();
      expect(cleanId(64).safeParse(text).success, text).toBe(true);
    }
    // The index is in UTF-16 units, as JavaScript strings count, after an astral character.
    expect(firstUnsafeIdChar('🚀\u200b')).toMatchObject({ index: 2 });
  });

  it('refuses a workspace that can pass for another, in a subject and in a grant, and keeps one-script names', () => {
    const subject = (workspace: string) => CallerSubject.safeParse({ workspace, path: '/p' });
    const grant = (workspace: string) => WorkspaceGrant.safeParse({ workspace, users: ['bob'] });
    for (const look of [
      ' user:alice',
      'user:alice ',
      'user :alice',
      'user: alice',
      'us\u0435r:alice',
      'team-\u03bfps',
    ]) {
      expect(subject(look).error?.issues[0], look).toMatchObject({
        path: ['workspace'],
        params: { code: 'look_alike_workspace' },
      });
      expect(grant(look).success, look).toBe(false);
    }
    for (const fine of [
      'user:alice',
      'demo',
      '\u00e9quipe:ventes',
      '\u043a\u043e\u043c\u0430\u043d\u0434\u0430',
      'team a',
    ]) {
      expect(subject(fine).success, fine).toBe(true);
      if (!fine.startsWith('user:')) expect(grant(fine).success, fine).toBe(true);
    }
  });
});
