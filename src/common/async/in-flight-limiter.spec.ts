import { describe, expect, it } from 'vitest';
import { InFlightLimiter } from './in-flight-limiter.js';

describe('InFlightLimiter', () => {
  it('refuses past the cap per key, and frees a slot on release (once)', () => {
    const limiter = new InFlightLimiter(2);
    const first = limiter.acquire('a');
    const second = limiter.acquire('a');
    expect(first && second).toBeTruthy();
    expect(limiter.acquire('a')).toBeUndefined();
    expect(limiter.acquire('b')).toBeDefined();
    first!();
    first!();
    expect(limiter.count('a')).toBe(1);
    expect(limiter.acquire('a')).toBeDefined();
    expect(limiter.acquire('a')).toBeUndefined();
  });
});
