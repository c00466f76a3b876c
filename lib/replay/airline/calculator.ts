/**
 * The `calculate` tool's arithmetic: an expression over the characters `0123456789+-*\/(). `
 * evaluated with Python 3.11's rules (the reference tool calls `eval` on it), then
 * `str(round(float(result), 2))`. Integers are exact (BigInt) until converted to float, `/` is
 * true division, `//` floor division, `**` binds tighter than unary minus on its left and
 * associates to the right. Errors carry Python's message texts for the cases an arithmetic
 * expression can reach (division by zero, overflow, a negative base to a fractional power, a
 * literal with leading zeros, unbalanced parentheses, invalid syntax). Pure.
 *
 * Known gaps (no recorded call comes near them): a complex intermediate (`(-8) ** 0.5`) fails
 * at once where Python would go on computing with it; `**` on floats uses JavaScript's
 * `Math.pow`, which may differ from the C library in the last bit; a true division of integers
 * beyond 2^53 is rounded twice.
 */
import { pythonFloat, pythonRound2 } from './python-text.ts';

const ALLOWED = /^[0-9+\-*/(). ]*$/;

/** Python's value kinds that an expression of the allowed characters can produce. */
type Value = { kind: 'int'; v: bigint } | { kind: 'float'; v: number } | { kind: 'tuple' };

/** A Python exception raised while evaluating: `message` is `str(exception)`. */
export class PythonError extends Error {
  override readonly name = 'PythonError';
}

type Token = { kind: 'num'; text: string; at: number } | { kind: 'op'; text: string; at: number };

/** The output text of `calculate(expression)`: the rounded float, or `Error: ...`. */
export function calculate(expression: string): string {
  if (!ALLOWED.test(expression)) return 'Error: invalid characters in expression';
  try {
    return pythonFloat(pythonRound2(toFloat(evaluate(expression))));
  } catch (err) {
    if (err instanceof PythonError) return `Error: ${err.message}`;
    throw err;
  }
}

function syntaxError(message: string, line = 1): PythonError {
  return new PythonError(`${message} (<string>, line ${line})`);
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const ch = source[i] ?? '';
    if (ch === ' ') {
      i += 1;
      continue;
    }
    const number = /^(\d+\.?\d*|\.\d+)/.exec(source.slice(i));
    if (number !== null) {
      const text = number[1] ?? '';
      if (/^0\d/.test(text) && !text.includes('.') && !/^0+$/.test(text)) {
        throw syntaxError(
          'leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers',
        );
      }
      // A number directly followed by `.` (as in `1.2.3`) is an attribute access: not arithmetic.
      if (source[i + text.length] === '.') throw syntaxError('invalid syntax');
      tokens.push({ kind: 'num', text, at: i });
      i += text.length;
      continue;
    }
    const two = source.slice(i, i + 2);
    if (two === '**' || two === '//') {
      tokens.push({ kind: 'op', text: two, at: i });
      i += 2;
      continue;
    }
    if (ch === '.') throw syntaxError('invalid syntax');
    tokens.push({ kind: 'op', text: ch, at: i });
    i += 1;
  }
  return tokens;
}

/** Evaluates `source` with Python's grammar and semantics for + - * / // ** and parentheses. */
export function evaluate(source: string): Value {
  const tokens = tokenize(source);
  if (tokens.length === 0) throw syntaxError('invalid syntax', 0);
  checkParentheses(tokens);
  let pos = 0;
  const peek = (): Token | undefined => tokens[pos];
  const isOp = (text: string): boolean => {
    const t = peek();
    return t !== undefined && t.kind === 'op' && t.text === text;
  };

  /** One left-associative level, `operand (op operand)*`, for the binary operators in `ops`. */
  const leftAssociative =
    (operand: () => Value, ops: Readonly<Record<string, (a: Value, b: Value) => Value>>) => (): Value => {
      let left = operand();
      for (;;) {
        const t = peek();
        const apply =
          t !== undefined && t.kind === 'op' && Object.hasOwn(ops, t.text) ? ops[t.text] : undefined;
        if (apply === undefined) return left;
        pos += 1;
        left = apply(left, operand());
      }
    };
  const term = leftAssociative(() => unary(), { '*': multiply, '/': trueDivide, '//': floorDivide });
  const expression = leftAssociative(term, { '+': add, '-': subtract });
  const unary = (): Value => {
    if (isOp('-')) {
      pos += 1;
      return negate(unary());
    }
    if (isOp('+')) {
      pos += 1;
      return positive(unary());
    }
    return power();
  };
  const power = (): Value => {
    const base = call(atom());
    if (isOp('**')) {
      pos += 1;
      return raise(base, unary());
    }
    return base;
  };
  // `2(3)` is a call in Python's grammar: it parses, and fails when the int is called.
  const call = (value: Value): Value => {
    if (isOp('(')) {
      atom();
      throw new PythonError(`'${typeName(value)}' object is not callable`);
    }
    return value;
  };
  const atom = (): Value => {
    const t = peek();
    if (t === undefined) throw syntaxError('invalid syntax');
    if (t.kind === 'num') {
      pos += 1;
      return t.text.includes('.') ? { kind: 'float', v: Number(t.text) } : { kind: 'int', v: BigInt(t.text) };
    }
    if (t.text === '(') {
      pos += 1;
      if (isOp(')')) {
        pos += 1;
        return { kind: 'tuple' };
      }
      const inner = expression();
      if (!isOp(')')) throw syntaxError('invalid syntax');
      pos += 1;
      return inner;
    }
    throw syntaxError('invalid syntax');
  };

  const value = expression();
  if (pos !== tokens.length) throw syntaxError('invalid syntax');
  return value;
}

function checkParentheses(tokens: Token[]): void {
  let depth = 0;
  for (const t of tokens) {
    if (t.kind !== 'op') continue;
    if (t.text === '(') depth += 1;
    if (t.text === ')') {
      if (depth === 0) throw syntaxError("unmatched ')'");
      depth -= 1;
    }
  }
  if (depth > 0) throw syntaxError("'(' was never closed");
}

function typeName(v: Value): string {
  return v.kind;
}

/** `float(v)`: exact ints rounded to the nearest double; OverflowError past the double range. */
export function toFloat(v: Value): number {
  if (v.kind === 'float') return v.v;
  if (v.kind === 'tuple') {
    throw new PythonError("float() argument must be a string or a real number, not 'tuple'");
  }
  const f = Number(v.v);
  if (!Number.isFinite(f)) throw new PythonError('int too large to convert to float');
  return f;
}

function unsupported(op: string, a: Value, b: Value): PythonError {
  return new PythonError(`unsupported operand type(s) for ${op}: '${typeName(a)}' and '${typeName(b)}'`);
}

function numeric(op: string, a: Value, b: Value): [number, number] {
  if (a.kind === 'tuple' || b.kind === 'tuple') throw unsupported(op, a, b);
  return [toFloat(a), toFloat(b)];
}

function add(a: Value, b: Value): Value {
  if (a.kind === 'tuple' && b.kind === 'tuple') return a;
  if (a.kind === 'tuple') throw new PythonError(`can only concatenate tuple (not "${typeName(b)}") to tuple`);
  if (a.kind === 'int' && b.kind === 'int') return { kind: 'int', v: a.v + b.v };
  const [x, y] = numeric('+', a, b);
  return { kind: 'float', v: x + y };
}

function subtract(a: Value, b: Value): Value {
  if (a.kind === 'int' && b.kind === 'int') return { kind: 'int', v: a.v - b.v };
  const [x, y] = numeric('-', a, b);
  return { kind: 'float', v: x - y };
}

function multiply(a: Value, b: Value): Value {
  if (a.kind === 'tuple' || b.kind === 'tuple') {
    const count = a.kind === 'int' ? a : b.kind === 'int' ? b : null;
    if (count !== null) return { kind: 'tuple' };
    const other = a.kind === 'tuple' ? b : a;
    if (other.kind === 'float') throw new PythonError("can't multiply sequence by non-int of type 'float'");
    throw unsupported('*', a, b);
  }
  if (a.kind === 'int' && b.kind === 'int') return { kind: 'int', v: a.v * b.v };
  const [x, y] = numeric('*', a, b);
  return { kind: 'float', v: x * y };
}

function trueDivide(a: Value, b: Value): Value {
  if (a.kind === 'int' && b.kind === 'int') {
    if (b.v === 0n) throw new PythonError('division by zero');
    return { kind: 'float', v: Number(a.v) / Number(b.v) };
  }
  const [x, y] = numeric('/', a, b);
  if (y === 0) throw new PythonError('float division by zero');
  return { kind: 'float', v: x / y };
}

function floorDivide(a: Value, b: Value): Value {
  if (a.kind === 'int' && b.kind === 'int') {
    if (b.v === 0n) throw new PythonError('integer division or modulo by zero');
    const q = a.v / b.v;
    // BigInt division truncates; Python floors.
    return { kind: 'int', v: a.v % b.v !== 0n && a.v < 0n !== b.v < 0n ? q - 1n : q };
  }
  const [x, y] = numeric('//', a, b);
  if (y === 0) throw new PythonError('float floor division by zero');
  return { kind: 'float', v: floatFloorDiv(x, y) };
}

/** Python's float floor division: derived from fmod so that it agrees with `%`. */
function floatFloorDiv(x: number, y: number): number {
  let mod = x % y;
  let div = (x - mod) / y;
  if (mod !== 0) {
    if (y < 0 !== mod < 0) {
      mod += y;
      div -= 1;
    }
  }
  if (div === 0) return x / y < 0 || Object.is(x / y, -0) ? -0 : 0;
  let floor = Math.floor(div);
  if (div - floor > 0.5) floor += 1;
  return floor;
}

function negate(a: Value): Value {
  if (a.kind === 'int') return { kind: 'int', v: -a.v };
  if (a.kind === 'float') return { kind: 'float', v: -a.v };
  throw new PythonError("bad operand type for unary -: 'tuple'");
}

function positive(a: Value): Value {
  if (a.kind === 'tuple') throw new PythonError("bad operand type for unary +: 'tuple'");
  return a;
}

/** Bits beyond which an exact integer power is refused rather than computed (Python would hang). */
const MAX_POWER_BITS = 1_000_000;

function raise(a: Value, b: Value): Value {
  if (a.kind === 'int' && b.kind === 'int' && b.v >= 0n) {
    const magnitude = a.v < 0n ? -a.v : a.v;
    if (magnitude > 1n && Number(b.v) * magnitude.toString(2).length > MAX_POWER_BITS) {
      throw new PythonError('exponent too large for this calculator');
    }
    return { kind: 'int', v: a.v ** b.v };
  }
  const [x, y] = numeric('** or pow()', a, b);
  return { kind: 'float', v: floatPower(x, y) };
}

/** Python's float `**`: its special cases, then the library power; overflow raises. */
function floatPower(x: number, y: number): number {
  if (y === 0) return 1;
  if (Number.isNaN(x)) return x;
  if (Number.isNaN(y)) return x === 1 ? 1 : y;
  if (x === 0 && y < 0) throw new PythonError('0.0 cannot be raised to a negative power');
  if (x === 1) return 1;
  if (x === -1 && !Number.isFinite(y)) return 1;
  if (x < 0 && Number.isFinite(x) && Number.isFinite(y) && !Number.isInteger(y)) {
    throw new PythonError("float() argument must be a string or a real number, not 'complex'");
  }
  const result = x ** y;
  if (!Number.isFinite(result) && Number.isFinite(x) && Number.isFinite(y)) {
    throw new PythonError("(34, 'Numerical result out of range')");
  }
  return result;
}
