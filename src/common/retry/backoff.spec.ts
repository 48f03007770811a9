import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.js';

describe('Backoff', () => {
  it('doubles from the initial delay and stops at the maximum', () => {
    const backoff = new Backoff({ initialMs: 1_000, maxMs: 60_000, jitterRatio: 0 });
    const delays = Array.from({ length: 9 }, () => backoff.next());
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    expect(backoff.attempts).toBe(9);
  });

  it('starts again from the initial delay after a reset', () => {
    const backoff = new Backoff({ initialMs: 1_000, maxMs: 60_000, jitterRatio: 0 });
    backoff.next();
    backoff.next();
    backoff.reset();
    expect(backoff.attempts).toBe(0);
    expect(backoff.next()).toBe(1_000);
  });

  it.each([
    [0, 8_000],
    [0.5, 7_200],
    [1, 6_400],
  ])('takes off at most the jitter ratio (random %d gives %d ms)', (random, expected) => {
    const backoff = new Backoff({
      initialMs: 1_000,
      maxMs: 60_000,
      jitterRatio: 0.2,
      random: () => random,
    });
    backoff.next();
    backoff.next();
    backoff.next();
    expect(backoff.next()).toBe(expected);
  });

  it('max() gives the longest delay and still counts the failure', () => {
    const backoff = new Backoff({ initialMs: 1_000, maxMs: 60_000, jitterRatio: 0 });
    expect(backoff.max()).toBe(60_000);
    expect(backoff.attempts).toBe(1);
  });
});
