import { describe, expect, it } from 'vitest';
import { CURSOR_PATTERN, decodeCursor, encodeCursor } from './plant-cursor.js';

describe('plant cursors', () => {
  it.each([0n, 1n, -1n, 9007199254740993n, 2n ** 63n - 1n, -(2n ** 63n)])('round-trip %s', (id) => {
    const cursor = encodeCursor(id);
    expect(cursor).toMatch(new RegExp(CURSOR_PATTERN));
    expect(decodeCursor(cursor)).toBe(id);
  });

  it('decodes every string the documented pattern allows', () => {
    for (const cursor of ['AAAAAAAAAAA', '__________8', 'zzzzzzzzzzw', '0123456789A']) {
      expect(typeof decodeCursor(cursor)).toBe('bigint');
    }
  });

  it.each(['', 'abc', 'AAAAAAAAAAB', 'AAAAAAAAAAAA', 'AAAAAAAAAA='])(
    'refuses %j with a 400',
    (cursor) => {
      expect(() => decodeCursor(cursor)).toThrow(
        /cursor must come from the Link header of a previous page/,
      );
    },
  );
});
