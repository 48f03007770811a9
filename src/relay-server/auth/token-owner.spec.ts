import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bearerToken, ownerOf } from './token-owner.js';

const digest = (token: string) => createHash('sha256').update(token).digest();

describe('bearerToken', () => {
  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['Bearer  abc ', 'abc'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    [undefined, undefined],
  ])('%j → %j', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});

describe('ownerOf', () => {
  const owners = [
    { name: 'shop', tokenDigests: [digest('one'), digest('two')] },
    { name: 'lab', tokenDigests: [digest('three')] },
  ];
  it('finds the owner of any of its tokens, and nobody for others', () => {
    expect(ownerOf('two', owners)?.name).toBe('shop');
    expect(ownerOf('three', owners)?.name).toBe('lab');
    expect(ownerOf('four', owners)).toBeUndefined();
    expect(ownerOf(undefined, owners)).toBeUndefined();
  });
  it('gives a token two owners list to the first, as the config reads', () => {
    const shared = [...owners, { name: 'copy', tokenDigests: [digest('one')] }];
    expect(ownerOf('one', shared)?.name).toBe('shop');
  });
});
