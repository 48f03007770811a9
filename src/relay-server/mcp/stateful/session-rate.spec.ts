import { describe, expect, it } from 'vitest';
import { SessionRate } from './session-rate.js';

describe('SessionRate', () => {
  it('caps each client per minute and starts again the next minute', () => {
    let now = 1_000;
    const rate = new SessionRate(2, () => now);
    expect([rate.take('a'), rate.take('a'), rate.take('a')]).toEqual([true, true, false]);
    expect(rate.take('b')).toBe(true);
    now += 59_999;
    expect(rate.take('a')).toBe(false);
    now += 1;
    expect(rate.take('a')).toBe(true);
  });
});
