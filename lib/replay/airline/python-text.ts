/**
 * Python's text forms, as the airline tools' outputs spell them: `json.dumps` with its defaults
 * (separators `", "` and `": "`, `ensure_ascii`, keys in insertion order), `repr`/`str` of a
 * float, and `round(x, 2)`. The recorded outputs were produced by Python, so the live world must
 * print the same characters. Pure.
 *
 * A JSON number parsed in JavaScript no longer says whether it was written `100` or `100.0`:
 * an integral number prints as a Python int (`100`), any other as a Python float. The airline
 * database holds integers only, and no recorded argument is a float with an integral value.
 */

/** `json.dumps(value)` with Python's defaults. Maps print their entries in insertion order. */
export function pythonJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return pythonJsonNumber(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return pythonJsonString(value);
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (value instanceof Map) {
    return `{${[...value].map(([k, v]) => `${pythonJsonString(String(k))}: ${pythonJson(v)}`).join(', ')}}`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${pythonJsonString(k)}: ${pythonJson(v)}`).join(', ')}}`;
  }
  throw new TypeError(`Object of type ${typeof value} is not JSON serializable`);
}

function pythonJsonNumber(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Number.POSITIVE_INFINITY) return 'Infinity';
  if (n === Number.NEGATIVE_INFINITY) return '-Infinity';
  if (Number.isInteger(n)) return BigInt(n).toString();
  return pythonFloat(n);
}

/** A JSON string literal the way `json.dumps` writes it with `ensure_ascii=True`. */
export function pythonJsonString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i += 1) {
    const code = s.charCodeAt(i);
    const ch = s[i] ?? '';
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (code < 0x20 || code > 0x7e) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * `repr(x)` (= `str(x)`) of a Python float: the shortest digits that round-trip, in fixed
 * notation when the decimal exponent is in [-4, 16), else `d.ddde±XX`; an integral value keeps
 * `.0`. `nan`, `inf`, `-inf` for the non-finite values.
 */
export function pythonFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Number.POSITIVE_INFINITY) return 'inf';
  if (x === Number.NEGATIVE_INFINITY) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  // toExponential() without an argument gives the shortest round-tripping digits.
  const match = /^(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(Math.abs(x).toExponential());
  if (match === null) throw new Error(`unexpected number form ${x}`);
  const digits = `${match[1]}${match[2] ?? ''}`;
  const exponent = Number(match[3]);
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
    const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
    const fraction = digits.slice(exponent + 1);
    return `${sign}${whole}.${fraction === '' ? '0' : fraction}`;
  }
  const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const e = Math.abs(exponent).toString().padStart(2, '0');
  return `${sign}${mantissa}e${exponent < 0 ? '-' : '+'}${e}`;
}

/**
 * Python's `round(x, 2)` for a float: the exact binary value rounded to two decimals, an exact
 * tie going to the even hundredth (JavaScript's `toFixed` would round it up).
 */
export function pythonRound2(x: number): number {
  if (!Number.isFinite(x) || Math.abs(x) >= 2 ** 52) return x;
  // Two decimals tie only on odd multiples of 1/8 (0.125, 0.375, ...): x * 8 is then an odd integer.
  const eighths = x * 8;
  if (Number.isInteger(eighths) && eighths % 2 !== 0) {
    const low = Math.floor(x * 100);
    const even = low % 2 === 0 ? low : low + 1;
    return even / 100;
  }
  return Number(x.toFixed(2));
}
