import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { truncateForLog } from './truncate-for-log.js';
import { RateLimitedLog } from './rate-limited-log.js';

describe('RateLimitedLog', () => {
  it('writes a burst, then counts what it suppressed into the next line that passes', () => {
    let now = 0;
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      {},
      { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const log = new RateLimitedLog(logger, { ratePerSecond: 1, burst: 3, now: () => now });
    for (let i = 0; i < 50_000; i++) log.warn({ i }, 'junk');
    expect(lines).toHaveLength(3);
    now += 1_000;
    log.warn({}, 'junk');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatchObject({ msg: 'junk', suppressed: 49_997 });
  });
});

describe('truncateForLog', () => {
  it.each([
    ['short', 'short'],
    ['x'.repeat(300), `${'x'.repeat(200)}… (300 chars)`],
    [42, '42'],
    [null, 'null'],
    [[1], '<array>'],
    [{ a: 1 }, '<object>'],
  ])('%s', (value, expected) => {
    expect(truncateForLog(value)).toBe(expected);
  });
});
