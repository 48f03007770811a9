/** int64 ids are `bigint` everywhere past the JSON parser: numbers are exact to 2^53 only. */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export const INT64_RANGE_MESSAGE = `an integer from ${INT64_MIN} to ${INT64_MAX}`;

const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/;

/** An int64 parsed from a JSON value: a safe-integer number or an in-range bigint. */
export function toInt64(value: unknown): bigint | undefined {
  if (typeof value === 'bigint')
    return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  return undefined;
}

/** An int64 from text (a path segment, a cursor): decimal digits only, in range. */
export function parseInt64(text: string): bigint | undefined {
  return DECIMAL_INTEGER.test(text) && text.length <= 20 ? toInt64(BigInt(text)) : undefined;
}
