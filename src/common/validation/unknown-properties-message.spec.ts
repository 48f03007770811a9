import { describe, expect, it } from 'vitest';
import { unknownPropertiesMessage } from './validation.pipe.js';

describe('unknownPropertiesMessage', () => {
  it('names every property when there are at most 5', () => {
    expect(unknownPropertiesMessage(['a', 'b'])).toBe(
      'property a is not allowed; property b is not allowed',
    );
  });

  it('names the first 5 and counts the rest', () => {
    const keys = Array.from({ length: 6_500 }, (_, i) => `k${i}`);
    const message = unknownPropertiesMessage(keys);
    expect(message).toMatch(/^property k0 is not allowed; .*property k4 is not allowed; /);
    expect(message).toMatch(/and 6495 more unknown properties \(6500 in all\)$/);
    expect(message).not.toContain('k5 ');
    expect(message.length).toBeLessThan(300);
  });

  it('cuts a long name at 64 characters', () => {
    const message = unknownPropertiesMessage(['x'.repeat(10_000)]);
    expect(message).toBe(`property ${'x'.repeat(64)}... is not allowed`);
  });

  it('calls query names query parameters', () => {
    expect(unknownPropertiesMessage(['page'], 'query parameter')).toBe(
      'query parameter page is not allowed',
    );
  });
});
