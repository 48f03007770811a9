import { isInteger, isSafeNumber, parse, splitNumber, stringify } from 'lossless-json';

// Keeps every int64 exact: a bigint past 2^53; `1.0` or `9.0e15` (schemathesis sends them) read as
// integers; a fraction that would round to a whole number becomes NaN, never a rounded id.
export function parseJson(text: string): unknown {
  assertDepthAtMost(text, MAX_JSON_DEPTH);
  return parse(text, null, reviveNumber);
}

function reviveNumber(literal: string): number | bigint {
  if (isInteger(literal)) return isSafeNumber(literal) ? Number(literal) : BigInt(literal);
  const exact = exactInteger(literal);
  if (exact !== undefined) {
    // A safe integer is exactly representable, so Number() of its literal is exact too.
    return exact >= MIN_SAFE && exact <= MAX_SAFE ? Number(literal) : exact;
  }
  const value = Number(literal);
  return Number.isInteger(value) ? Number.NaN : value;
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Exponents are expanded up to 20 digits: `1e1000000000` must not make a gigabyte bigint. */
const MAX_EXPANDED_DIGITS = 20;

/** The integer a fraction or exponent literal spells exactly, if it spells one. */
function exactInteger(literal: string): bigint | undefined {
  const { sign, digits, exponent } = splitNumber(literal);
  if (digits === '0') return 0n;
  const trailingZeros = exponent - (digits.length - 1);
  if (trailingZeros < 0 || exponent + 1 > MAX_EXPANDED_DIGITS) return undefined;
  return BigInt(`${sign}${digits}${'0'.repeat(trailingZeros)}`);
}

/** Serialises bigint as a bare JSON number, so response ids are as exact as stored ones. */
export function stringifyJson(value: unknown): string {
  return stringify(value) ?? 'null';
}

/** Nesting allowed in a parsed document: the parser recurses, and 10,000 deep overflowed. */
export const MAX_JSON_DEPTH = 64;

export class JsonTooDeepError extends Error {
  constructor(readonly maxDepth: number) {
    super(`arrays and objects may nest at most ${maxDepth} levels deep`);
    this.name = 'JsonTooDeepError';
  }
}

/** Counts brackets outside strings in one pass, before parsing; malformed text is the parser's. */
export function assertDepthAtMost(text: string, maxDepth: number): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === 0x5c /* backslash */) i++;
      else if (code === 0x22 /* " */) inString = false;
    } else if (code === 0x22) {
      inString = true;
    } else if (code === 0x5b /* [ */ || code === 0x7b /* { */) {
      if (++depth > maxDepth) throw new JsonTooDeepError(maxDepth);
    } else if (code === 0x5d /* ] */ || code === 0x7d /* } */) {
      depth--;
    }
  }
}
