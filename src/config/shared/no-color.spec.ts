import { describe, expect, it } from 'vitest';
import { noColorRequested } from './no-color.js';

describe('noColorRequested (no-color.org)', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['1', true],
    ['0', true],
    ['false', true],
  ])('NO_COLOR=%j: JSON lines on a terminal %s', (value, requested) => {
    expect(noColorRequested(value)).toBe(requested);
  });
});
