import { describe, expect, it } from 'vitest';
import { JsonTooDeepError, MAX_JSON_DEPTH, parseJson, stringifyJson } from './lossless-json.js';

describe('parseJson', () => {
  it.each([
    ['7', 7],
    ['-7', -7],
    ['9007199254740991', 9007199254740991],
    ['9007199254740993', 9007199254740993n],
    ['-9223372036854775808', -9223372036854775808n],
    ['99999999999999999999', 99999999999999999999n],
    ['1.5', 1.5],
    ['1e3', 1000],
  ])('reads %s exactly', (text, expected) => {
    expect(parseJson(text)).toBe(expected);
  });

  // JSON Schema counts 1.0 as an integer: a literal that spells a whole number exactly is that
  // integer, however it is written.
  it.each([
    ['5.0', 5],
    ['-5.000', -5],
    ['1.0e1', 10],
    ['9007199254740993.0', 9007199254740993n],
    ['-9007199254740992.0', -9007199254740992n],
    ['9007199254740991.0', 9007199254740991],
    ['-9007199254740993.00', -9007199254740993n],
    ['9223372036854775807.0', 9223372036854775807n],
    ['-9223372036854775808.0', -9223372036854775808n],
    ['9.007199254740993e15', 9007199254740993n],
    ['9007199254740993E0', 9007199254740993n],
    ['90071992547409930e-1', 9007199254740993n],
    ['9.223372036854775807e18', 9223372036854775807n],
    ['1e19', 10000000000000000000n],
    ['0.0', 0],
  ])('reads the whole number %s as that exact integer', (text, expected) => {
    expect(parseJson(text)).toBe(expected);
  });

  it.each([
    '9007199254740993.5',
    '-9007199254740993.1',
    '9007199254740992.000000001',
    '1.00000000000000000001',
    '9.0071992547409935e15',
    '1e25',
  ])('turns %s, which a number would round to an integer, into NaN', (text) => {
    expect(parseJson(text)).toBeNaN();
  });

  it('does not expand a huge exponent into a bigint (no int64 has 20+ digits)', () => {
    expect(parseJson('1e1000000000')).toBe(Number.POSITIVE_INFINITY);
    expect(parseJson('-1e1000000000')).toBe(Number.NEGATIVE_INFINITY);
  });

  it('keeps __proto__ as an own key without touching the prototype', () => {
    const value = parseJson('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each(['{"a": 1, "a": 2}', '{"a": }', '', '{"a": 1} x'])('refuses %j', (text) => {
    expect(() => parseJson(text)).toThrow();
  });
});

describe('stringifyJson', () => {
  it('writes bigint as a bare number and drops undefined', () => {
    expect(stringifyJson({ id: 9223372036854775807n, name: 'x', tag: undefined })).toBe(
      '{"id":9223372036854775807,"name":"x"}',
    );
  });

  it('round-trips int64 ids', () => {
    const text = '{"id":-9223372036854775808,"items":[{"id":9007199254740993}]}';
    expect(stringifyJson(parseJson(text))).toBe(text);
  });
});

describe('nesting depth', () => {
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

  it(`parses ${MAX_JSON_DEPTH} levels`, () => {
    expect(() => parseJson(nested(MAX_JSON_DEPTH))).not.toThrow();
    expect(() => parseJson(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`)).not.toThrow();
  });

  it.each([MAX_JSON_DEPTH + 1, 10_000, 100_000])(
    'refuses %i levels with a message that says so, not a stack overflow',
    (depth) => {
      expect(() => parseJson(nested(depth))).toThrow(JsonTooDeepError);
      expect(() => parseJson('{"a":'.repeat(depth) + '1' + '}'.repeat(depth))).toThrow(
        /nest at most 64 levels/,
      );
    },
  );

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = `{"name": "${'[{'.repeat(200)}\\"${'['.repeat(200)}"}`;
    expect(parseJson(text)).toEqual({ name: `${'[{'.repeat(200)}"${'['.repeat(200)}` });
  });
});
