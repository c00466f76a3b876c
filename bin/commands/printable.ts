/**
 * Control characters out of text the CLI prints. No imports, so that the
 * program's error paths (bin/commands/program.ts, context.ts) use it without loading the
 * formatters' modules for `--help`; bin/commands/format.ts re-exports both functions.
 */

/**
 * C0 controls (tab and newline too), DEL and C1 controls; and the bidirectional formatting
 * characters (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), which can make a path
 * display as another (`/x\u202egnp.exe` shown as `/xexe.png`); and the line and paragraph
 * separators (U+2028, U+2029), which some viewers break a line at: what the API refused in
 * identifiers before it refused every invisible format character there (lib/contracts/clean-text.ts),
 * so text stored before prints safely too. Zero-width joiners and non-joiners stay: prose in
 * several scripts, and emoji, need them.
 */
const CONTROL_CHARS = /[\p{Cc}\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/gu;

/**
 * `text` with every control character (U+0000-U+001F, U+007F-U+009F) and bidirectional
 * formatting character or line or paragraph separator replaced by its escape
 * `\uXXXX` (lower-case hex, as JSON writes it), so that it shows as one line of plain text: an
 * ESC cannot start a terminal sequence, a CR or LF cannot forge a line. Other text is kept.
 */
export function printable(text: string): string {
  return text.replace(CONTROL_CHARS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A block of lines made printable line by line: like `printable`, but the newlines between the
 * lines stay. For output that is already laid out (the CLI's last line of defence).
 */
export function printableLines(text: string): string {
  return text.split('\n').map(printable).join('\n');
}
