import { describe, expect, it } from 'vitest';
import { LogThrottle } from './log-throttle.js';

describe('LogThrottle', () => {
  it('lets one line per interval through and counts the rest', () => {
    let now = 0;
    const throttle = new LogThrottle(10_000, () => now);
    expect(throttle.take()).toEqual({ log: true, suppressed: 0 });
    expect(throttle.take()).toEqual({ log: false, suppressed: 0 });
    now = 9_999;
    expect(throttle.take().log).toBe(false);
    now = 10_000;
    expect(throttle.take()).toEqual({ log: true, suppressed: 2 });
    expect(throttle.take().log).toBe(false);
  });
});
