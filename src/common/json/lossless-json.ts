import { isInteger, isSafeNumber, parse, splitNumber, stringify } from 'lossless-json';

/**
 * JSON that keeps every int64 exact. `JSON.parse` turns 9007199254740993 into
 * 9007199254740992 before any validator runs (expressjs/body-parser#278), and `JSON.stringify`
 * throws on bigint. Here an integer that a number cannot hold exactly becomes a bigint; every
 * other number stays a number.
 *
 * JSON Schema, and so our OpenAPI 3.1 document's `type: integer`, counts `1.0` as an integer,
 * and schema-driven clients (schemathesis) send ids that way. A literal whose fraction is all
 * zeros, or whose exponent makes it a whole number (`9007199254740993.0`, `9.007199254740993e15`),
 * spells an exact integer, so it is read as that integer. A literal with a non-zero fraction
 * is not an integer even when a number would round it to one (`9007199254740993.5`,
 * `1.00000000000000000001`): it becomes NaN and fails validation rather than passing as a
 * rounded id.
 */
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

/**
 * Whole numbers written with an exponent are expanded only up to this many digits: an int64 has
 * at most 19, and `1e1000000000` must not make a gigabyte bigint. Longer ones are no int64
 * anyway; they are left to Number() (and then refused like any huge id).
 */
const MAX_EXPANDED_DIGITS = 20;

/** The integer a fraction or exponent literal spells exactly, or undefined when it has a non-zero fraction. */
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

/**
 * How deep arrays and objects may nest in a document we parse. The parser recurses once per
 * level, so `[[[[...]]]]` 10,000 deep overflowed the stack ("Maximum call stack size
 * exceeded"); a plant is 1 level deep, and 64 leaves room for any honest client.
 */
export const MAX_JSON_DEPTH = 64;

export class JsonTooDeepError extends Error {
  constructor(readonly maxDepth: number) {
    super(`arrays and objects may nest at most ${maxDepth} levels deep`);
    this.name = 'JsonTooDeepError';
  }
}

/**
 * One pass over the text, before any parsing: counts the open brackets outside strings and
 * throws JsonTooDeepError past `maxDepth`. Malformed text is left for the parser to describe.
 */
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
