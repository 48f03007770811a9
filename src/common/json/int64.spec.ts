import { describe, expect, it } from 'vitest';
import { INT64_MAX, INT64_MIN, parseInt64, toInt64 } from './int64.js';

describe('toInt64', () => {
  it.each([
    [0, 0n],
    [-5, -5n],
    [Number.MAX_SAFE_INTEGER, 9007199254740991n],
    [INT64_MAX, INT64_MAX],
    [INT64_MIN, INT64_MIN],
  ])('accepts %s', (value, expected) => {
    expect(toInt64(value)).toBe(expected);
  });

  it.each([INT64_MAX + 1n, INT64_MIN - 1n, 1.5, Number.NaN, 2 ** 60, '5', null, true, undefined])(
    'refuses %s',
    (value) => {
      expect(toInt64(value)).toBeUndefined();
    },
  );
});

describe('parseInt64', () => {
  it.each([
    ['0', 0n],
    ['-1', -1n],
    ['9223372036854775807', INT64_MAX],
    ['-9223372036854775808', INT64_MIN],
  ])('parses %s', (text, expected) => {
    expect(parseInt64(text)).toBe(expected);
  });

  it.each(['', '-', '01', '+1', '1.0', '1e3', '0x10', ' 1', '9223372036854775808', 'abc'])(
    'refuses %j',
    (text) => {
      expect(parseInt64(text)).toBeUndefined();
    },
  );
});
