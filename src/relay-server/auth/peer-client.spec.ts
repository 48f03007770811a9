import { describe, expect, it } from 'vitest';
import { peerClient } from './peer-client.js';

const isSecret = (value: string) => value === 's3cret';
const forwarded = {
  'x-relay-peer-secret': 's3cret',
  'x-relay-peer-client': encodeURIComponent('oauth:user 1'),
  'x-relay-peer-agents': 'shop,garden',
};

describe('peerClient', () => {
  it('is undefined for a request that claims no peer', () => {
    expect(peerClient({ authorization: 'Bearer x' }, isSecret)).toBeUndefined();
  });

  it('gives the client the forwarding replica authenticated', () => {
    expect(peerClient(forwarded, isSecret)).toEqual({
      name: 'oauth:user 1',
      tokenDigests: [],
      agents: new Set(['shop', 'garden']),
    });
  });

  it.each([
    ['a wrong secret', { ...forwarded, 'x-relay-peer-secret': 'guess' }],
    ['no client', { 'x-relay-peer-secret': 's3cret', 'x-relay-peer-agents': 'shop' }],
    ['an empty client', { ...forwarded, 'x-relay-peer-client': '' }],
    ['a malformed client', { ...forwarded, 'x-relay-peer-client': '%E0%A4%A' }],
  ])('refuses %s', (_case, headers) => {
    expect(peerClient(headers, isSecret)).toBe('refused');
  });
});
