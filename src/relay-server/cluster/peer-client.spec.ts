import { createSecretKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isPeerSignature, type PeerSigned, signPeerRequest } from './peer-signature.js';
import { peerClient } from './peer-client.js';

const secret = createSecretKey(Buffer.from('s3cret'));
const isSigned = (given: string, request: PeerSigned) => isPeerSignature(secret, request, given);
const client = encodeURIComponent('oauth:user 1');
const path = '/mcp/shop/files';
const signature = signPeerRequest(secret, {
  method: 'POST',
  path,
  client,
  agents: 'shop,garden',
  session: 'abc',
});
const headers = {
  'x-relay-peer-signature': signature,
  'x-relay-peer-client': client,
  'x-relay-peer-agents': 'shop,garden',
  'mcp-session-id': 'abc',
};
const forwarded = { method: 'POST', originalUrl: path, headers };

describe('peerClient', () => {
  it('is undefined for a request that claims no peer', () => {
    const request = { ...forwarded, headers: { authorization: 'Bearer x' } };
    expect(peerClient(request, isSigned)).toBeUndefined();
  });

  it('gives the client the forwarding replica authenticated', () => {
    expect(peerClient(forwarded, isSigned)).toEqual({
      name: 'oauth:user 1',
      tokenDigests: [],
      agents: new Set(['shop', 'garden']),
    });
  });

  it("is null for a replica's own request, on no client's behalf (a ping)", () => {
    const signed = { method: 'GET', path: '/relay-peer/ping', client: '', agents: '', session: '' };
    const ping = {
      method: 'GET',
      originalUrl: '/relay-peer/ping',
      headers: {
        'x-relay-peer-signature': signPeerRequest(secret, signed),
        'x-relay-peer-client': '',
        'x-relay-peer-agents': '',
      },
    };
    expect(peerClient(ping, isSigned)).toBeNull();
    expect(peerClient({ ...ping, originalUrl: '/mcp/shop' }, isSigned)).toBe('refused');
  });

  it.each([
    ['a guessed signature', { headers: { ...headers, 'x-relay-peer-signature': 'a-guess' } }],
    ['another method', { method: 'DELETE' }],
    ['another path', { originalUrl: '/mcp/bank/files' }],
    ['another client', { headers: { ...headers, 'x-relay-peer-client': 'admin' } }],
    ['more agents', { headers: { ...headers, 'x-relay-peer-agents': 'shop,garden,bank' } }],
    ['another session', { headers: { ...headers, 'mcp-session-id': 'xyz' } }],
    ['no client', { headers: { ...headers, 'x-relay-peer-client': undefined } }],
  ])('refuses %s', (_case, change) => {
    expect(peerClient({ ...forwarded, ...change }, isSigned)).toBe('refused');
  });
});
