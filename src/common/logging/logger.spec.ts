import { describe, expect, it } from 'vitest';
import { prettyLogs } from './logger.js';

describe('prettyLogs (no-color.org)', () => {
  it.each([
    [true, undefined, true],
    [true, '', true],
    [true, '1', false],
    [true, '0', false],
    [false, undefined, false],
    [undefined, undefined, false],
    [false, '', false],
  ])('stdout a terminal: %s, NO_COLOR=%j: pretty %s', (tty, noColor, pretty) => {
    expect(prettyLogs(tty, noColor)).toBe(pretty);
  });
});
