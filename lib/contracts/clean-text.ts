/**
 * Text a caller gives that is printed where operators look (the CLI, `watch`, the console, logs):
 * no control character (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F) in an identifier, so that
 * none can clear a terminal or forge a line; and, in an identifier, no invisible character (a
 * format character, Unicode category Cf: bidirectional marks, zero-width characters, the soft
 * hyphen, the byte-order mark, ...; nor a line or paragraph separator, U+2028, U+2029), so that
 * none can make one name display as another or forge a line; nor, in an identifier, a lone
 * surrogate (not well-formed Unicode) or a compatibility character (one that Unicode's NFKC
 * normalization replaces: a fullwidth colon or slash, a no-break space, a ligature), which reads
 * as another character. Refused
 * with the zod issue code `control_character` (params.code), answered 400 validation_failed
 * naming the field.
 */
import { z } from 'zod';

/**
 * The first C0 control (U+0000-U+001F), DEL (U+007F) or C1 control (U+0080-U+009F) of `text`
 * that `allowed` does not hold, with its UTF-16 index, or null. Such a character in a subject or
 * an objective could clear a terminal or forge a line where the run is shown.
 */
export function firstControlChar(text: string, allowed = ''): { index: number; char: string } | null {
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if ((c <= 0x1f || (c >= 0x7f && c <= 0x9f)) && !allowed.includes(text[i] as string)) {
      return { index: i, char: codePointName(c) };
    }
  }
  return null;
}

/**
 * Invisible characters an identifier may not hold: every format character (Unicode category Cf:
 * the bidirectional marks and embeddings U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069,
 * the zero-width U+200B-U+200D and U+2060, the soft hyphen U+00AD, the byte-order mark U+FEFF,
 * U+180E, the interlinear annotations U+FFF9-U+FFFB, the musical U+1D173-U+1D17A, the tags
 * U+E0001-U+E007F, ...) and the line and paragraph separators (U+2028, U+2029): each makes one
 * name display as another, or breaks a line, where it is shown.
 */
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}]/u;

/**
 * The first character of `text` an identifier may not hold, with its UTF-16 index, or null:
 * a control character ({@link firstControlChar}, none allowed) or an invisible one (a format
 * character or a line or paragraph separator, INVISIBLE).
 */
export function firstUnsafeIdChar(
  text: string,
): { index: number; char: string; bidi: boolean; reads_as?: string; lone_surrogate?: true } | null {
  let i = 0;
  for (const ch of text) {
    const c = ch.codePointAt(0) as number;
    const control = c <= 0x1f || (c >= 0x7f && c <= 0x9f);
    if (control || INVISIBLE.test(ch)) return { index: i, char: codePointName(c), bidi: !control };
    if (c >= 0xd800 && c <= 0xdfff)
      return { index: i, char: codePointName(c), bidi: false, lone_surrogate: true };
    // A compatibility character (a fullwidth colon or slash, a no-break space, a ligature, ...)
    // reads as another character: `user：carol` would look like `user:carol`.
    const plain = ch.normalize('NFKC');
    if (plain !== ch) return { index: i, char: codePointName(c), bidi: false, reads_as: plain };
    i += ch.length;
  }
  return null;
}

function codePointName(c: number): string {
  return `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Adds a `control_character` issue at `path` when `text` holds a control character not in `allowed`. */
export function refuseControlChars(
  ctx: z.RefinementCtx,
  path: string[],
  text: string | undefined,
  allowed = '',
): void {
  const found = text === undefined ? null : firstControlChar(text, allowed);
  if (found === null) return;
  ctx.addIssue({
    code: 'custom',
    path,
    params: { code: 'control_character' },
    message: `holds the control character ${found.char} at index ${found.index}${allowed === '' ? '' : ' (only tab and newline are allowed)'}`,
  });
}

/**
 * Adds a `control_character` issue at `path` when the identifier `text` holds a control
 * character or an invisible one (a format character or a line or paragraph separator)
 * ({@link firstUnsafeIdChar}).
 */
export function refuseUnsafeIdChars(ctx: z.RefinementCtx, path: string[], text: string | undefined): void {
  const found = text === undefined ? null : firstUnsafeIdChar(text);
  if (found === null) return;
  ctx.addIssue({
    code: 'custom',
    path,
    params: { code: 'control_character' },
    message:
      found.reads_as !== undefined
        ? `holds the compatibility character ${found.char} at index ${found.index}, which reads as ${JSON.stringify(found.reads_as)}: write that instead`
        : found.lone_surrogate === true
          ? `holds the lone surrogate ${found.char} at index ${found.index} (not well-formed Unicode)`
          : found.bidi
            ? `holds the invisible (format or separator) character ${found.char} at index ${found.index}`
            : `holds the control character ${found.char} at index ${found.index}`,
  });
}

/**
 * A caller-chosen identifier (a create key, a control id, a resume key, a name in a registry
 * document, a function path, an op id, ...): 1..`max` characters (UTF-16 units), none of them a
 * control character (C0, C1, DEL) nor an invisible one (a format character or a line or paragraph
 * separator; 400 validation_failed with issue code `control_character`), so that it prints
 * safely wherever it is shown.
 */
export function cleanId(max: number) {
  return z
    .string()
    .min(1)
    .max(max)
    .superRefine((text, ctx) => refuseUnsafeIdChars(ctx, [], text));
}

/** Letters of the scripts whose letters pass for Latin ones (Cyrillic а, Greek ο, Armenian ս, Cherokee Ꭺ). */
const LATIN_LOOK_ALIKE = /[\p{Script=Cyrillic}\p{Script=Greek}\p{Script=Armenian}\p{Script=Cherokee}]/u;
const LATIN_LETTER = /\p{Script=Latin}/u;

/**
 * Refuses a workspace name that can pass for another (issue code `look_alike_workspace`): one
 * with whitespace at either end or beside a `:` (` user:alice`, `user :alice`), or one mixing
 * Latin letters with letters of a script that looks Latin (`usеr:alice` with a Cyrillic е).
 * Names in one script, Latin with accents or any other, are kept.
 */
export function refuseLookAlikeWorkspace(ctx: z.RefinementCtx, path: string[], workspace: string): void {
  const reason =
    workspace.trim() !== workspace || /\s:|:\s/u.test(workspace)
      ? 'has whitespace at an end or beside a ":"'
      : LATIN_LETTER.test(workspace) && LATIN_LOOK_ALIKE.test(workspace)
        ? 'mixes Latin letters with Cyrillic, Greek, Armenian or Cherokee ones that look like them'
        : null;
  if (reason === null) return;
  ctx.addIssue({
    code: 'custom',
    path,
    params: { code: 'look_alike_workspace' },
    message: `the workspace ${reason}, so it could pass for another: write it in one script, without that whitespace`,
  });
}
