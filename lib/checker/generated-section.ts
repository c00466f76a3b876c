/**
 * A generated part of a hand-written Markdown page: the lines between
 * `<!-- BEGIN GENERATED: <name> ... -->` and `<!-- END GENERATED: <name> -->` belong to a
 * renderer; everything around them is prose that the renderer keeps as is. Used by
 * docs/reference/http-api.md (bin/write-http-docs.ts) and docs/reference/cli.md
 * (bin/write-cli-docs.ts).
 */

/** Thrown when a page lacks its markers (or has them twice, or out of order). */
export class GeneratedSectionError extends Error {
  override readonly name = 'GeneratedSectionError';
  readonly code = 'generated_section_missing';
}

/** The opening marker line of section `name`, saying which command writes it. */
export function beginMarker(name: string, command: string): string {
  return `<!-- BEGIN GENERATED: ${name} (by \`${command}\`: edit the source, not these lines) -->`;
}

/** The closing marker line of section `name`. */
export function endMarker(name: string): string {
  return `<!-- END GENERATED: ${name} -->`;
}

/**
 * `page` with the lines between section `name`'s markers replaced by `body` (no trailing
 * newline needed). Throws GeneratedSectionError when the markers are not there exactly once each,
 * begin before end.
 */
export function replaceSection(page: string, name: string, command: string, body: string): string {
  const lines = page.split('\n');
  const begin = lines.findIndex((line) => line.startsWith(`<!-- BEGIN GENERATED: ${name} `));
  const end = lines.indexOf(endMarker(name));
  const count = (prefix: string) => lines.filter((line) => line.startsWith(prefix)).length;
  if (
    begin < 0 ||
    end < begin ||
    count(`<!-- BEGIN GENERATED: ${name} `) !== 1 ||
    count(endMarker(name)) !== 1
  ) {
    throw new GeneratedSectionError(
      `the page has no single "${beginMarker(name, command)}" ... "${endMarker(name)}" pair`,
    );
  }
  return [
    ...lines.slice(0, begin),
    beginMarker(name, command),
    body.replace(/\n+$/, ''),
    ...lines.slice(end),
  ].join('\n');
}
