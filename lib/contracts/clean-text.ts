/**
 * Text a caller gives that is printed where operators look (the CLI, `watch`, the console, logs):
 * no control character (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F) in an identifier, so that
 * none can clear a terminal or forge a line. Refused with the zod issue code `control_character`
 * (params.code), answered 400 validation_failed naming the field.
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
      return { index: i, char: `U+${c.toString(16).toUpperCase().padStart(4, '0')}` };
    }
  }
  return null;
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
 * A caller-chosen identifier (a create key, a control id, a resume key, a name in a registry
 * document, a function path, an op id, ...): 1..`max` characters, none of them a control
 * character (C0, C1, DEL: 400 validation_failed with issue code `control_character`), so that
 * it prints safely wherever it is shown.
 */
export function cleanId(max: number) {
  return z
    .string()
    .min(1)
    .max(max)
    .superRefine((text, ctx) => refuseControlChars(ctx, [], text));
}
