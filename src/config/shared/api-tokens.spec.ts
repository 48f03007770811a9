import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { matchesAnyToken, parseApiTokens, sha256 } from './api-tokens.js';

const plain = 'p'.repeat(32);
const other = 'o'.repeat(40);
const digestOf = (token: string) => createHash('sha256').update(token).digest('hex');

describe('parseApiTokens', () => {
  it('accepts sha256 entries and plain tokens of 32+ characters, trimming spaces', () => {
    const parsed = parseApiTokens(` sha256:${digestOf(other)} , ${plain}`);
    expect(parsed.problems).toEqual([]);
    expect(parsed.digests).toEqual([sha256(other), sha256(plain)]);
  });

  it.each([
    [
      'a short plain token',
      'short',
      /entry 1 must be sha256:<64 hex> or a plain token of at least 32/,
    ],
    ['a bad digest', `${plain},sha256:zz`, /entry 2 must be sha256: followed by 64 hex digits/],
    ['whitespace inside', `${'a'.repeat(20)} ${'b'.repeat(20)}`, /entry 1 must be/],
  ])('reports %s without echoing it', (_case, value, message) => {
    const parsed = parseApiTokens(value);
    expect(parsed.problems.join('\n')).toMatch(message);
    expect(parsed.problems.join('\n')).not.toContain('short');
  });

  it('names the setting it was given (the relay server passes its own)', () => {
    expect(parseApiTokens('sha256:zz', 'RELAY_AGENTS.shop').problems).toEqual([
      'RELAY_AGENTS.shop entry 1 must be sha256: followed by 64 hex digits',
    ]);
    expect(parseApiTokens('sha256:zz').problems[0]).toMatch(/^API_TOKENS entry 1/);
  });

  it('treats empty as no tokens', () => {
    expect(parseApiTokens('')).toEqual({ digests: [], problems: [] });
    expect(parseApiTokens(undefined)).toEqual({ digests: [], problems: [] });
  });
});

describe('matchesAnyToken', () => {
  const digests = [sha256(plain), sha256(other)];
  it('matches any configured token', () => {
    expect(matchesAnyToken(plain, digests)).toBe(true);
    expect(matchesAnyToken(other, digests)).toBe(true);
  });
  it.each(['', plain.slice(1), `${plain}x`, plain.toUpperCase()])('refuses %j', (token) => {
    expect(matchesAnyToken(token, digests)).toBe(false);
  });
  it('refuses everything when no token is configured', () => {
    expect(matchesAnyToken(plain, [])).toBe(false);
  });
});
