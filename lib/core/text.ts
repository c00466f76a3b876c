/**
 * Text that can be stored and serialized: every string (object keys included) must be
 * well-formed UTF-16, i.e. hold no lone surrogate. A lone surrogate cannot be encoded as UTF-8,
 * so a run input, subject path or steer carrying one would make the run record, its events or
 * the reducer request unserializable later; the API refuses it at the boundary instead
 * (`invalid_unicode`).
 */

/** Where the first ill-formed string of a JSON value is (a dotted path, `''` for the value itself), or null. */
export function illFormedPath(value: unknown): string | null {
  return walk(value, [], 0);
}

/** Deeper values are refused by the depth limit (MAX_JSON_DEPTH) before this is asked. */
const MAX_WALK_DEPTH = 1_000;

function walk(value: unknown, path: (string | number)[], depth: number): string | null {
  if (typeof value === 'string') return value.isWellFormed() ? null : render(path);
  if (typeof value !== 'object' || value === null || depth > MAX_WALK_DEPTH) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = walk(value[i], [...path, i], depth + 1);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, child] of Object.entries(value)) {
    if (!key.isWellFormed()) return render([...path, key]);
    const found = walk(child, [...path, key], depth + 1);
    if (found !== null) return found;
  }
  return null;
}

/** The path as the API's validation issues spell it (`subject.path`, `input.0`). */
function render(path: (string | number)[]): string {
  return path
    .map((p) => (typeof p === 'string' ? p.replace(/[\uD800-\uDFFF]/g, '\uFFFD') : String(p)))
    .join('.');
}

/**
 * Whether a URL component (percent-encoded, as it arrives) decodes to well-formed text: false
 * for an encoding of invalid UTF-8 (such as a surrogate's three bytes, `%ED%A0%80`).
 */
export function decodesToWellFormedText(component: string): boolean {
  try {
    return decodeURIComponent(component).isWellFormed();
  } catch {
    return false;
  }
}
