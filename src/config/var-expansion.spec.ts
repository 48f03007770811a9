import { describe, expect, it } from 'vitest';
import { expandVariables } from './var-expansion.js';

describe('expandVariables', () => {
  const env = { TOKEN: 'abc', EMPTY: '' };
  it.each([
    ['${TOKEN}', 'abc'],
    ['Bearer ${TOKEN}!', 'Bearer abc!'],
    ['${MISSING:-fallback}', 'fallback'],
    ['${EMPTY:-fallback}', 'fallback'],
    ['${TOKEN:-fallback}', 'abc'],
    ['${MISSING:-}', ''],
    ['no references', 'no references'],
    ['$TOKEN stays', '$TOKEN stays'],
  ])('%s → %s', (template, expected) => {
    expect(expandVariables(template, env)).toEqual({ value: expected, missing: [] });
  });

  it("expands only the environment's own variables, never inherited properties", () => {
    // process.env inherits Object.prototype: `${constructor}` once gave "function Object()...".
    expect(expandVariables('${constructor}', process.env)).toEqual({
      value: '',
      missing: ['constructor'],
    });
  });

  it('reports unset variables without a default', () => {
    expect(expandVariables('${A}-${TOKEN}-${B}', env).missing).toEqual(['A', 'B']);
  });
});
