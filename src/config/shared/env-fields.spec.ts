import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { noColorField } from './env-fields.js';

describe('NO_COLOR (no-color.org)', () => {
  const schema = z.object(noColorField);
  it.each([
    [undefined, false],
    ['', false],
    ['1', true],
    ['0', true],
    ['false', true],
  ])('NO_COLOR=%j: JSON lines on a terminal %s', (value, requested) => {
    expect(schema.parse({ NO_COLOR: value }).NO_COLOR).toBe(requested);
  });
});
