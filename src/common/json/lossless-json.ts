import { isInteger, isSafeNumber, parse, stringify } from 'lossless-json';

/**
 * JSON that keeps every int64 exact. `JSON.parse` turns 9007199254740993 into
 * 9007199254740992 before any validator runs (expressjs/body-parser#278), and `JSON.stringify`
 * throws on bigint. Here an integer literal that a number cannot hold exactly becomes a bigint;
 * every other number stays a number. A non-integer literal whose value is a huge integer
 * (`9007199254740993.0`) cannot be kept exactly, so it becomes NaN and fails validation rather
 * than being silently rounded.
 */
export function parseJson(text: string): unknown {
  return parse(text, null, (digits: string) => {
    if (isInteger(digits)) return isSafeNumber(digits) ? Number(digits) : BigInt(digits);
    const value = Number(digits);
    return Number.isInteger(value) && !Number.isSafeInteger(value) ? Number.NaN : value;
  });
}

/** Serialises bigint as a bare JSON number, so response ids are as exact as stored ones. */
export function stringifyJson(value: unknown): string {
  return stringify(value) ?? 'null';
}
