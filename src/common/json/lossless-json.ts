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
  assertDepthAtMost(text, MAX_JSON_DEPTH);
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
