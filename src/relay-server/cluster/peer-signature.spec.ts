import { createSecretKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { onPeer } from './peer-headers.js';
import { isPeerSignature, PEER_SIGNATURE_VALIDITY_MS, signPeerRequest } from './peer-signature.js';

const secret = createSecretKey(Buffer.from('shared'));
const signed = { method: 'POST', path: '/mcp/a/b', client: 'c', agents: 'a', session: '' };

describe('peer signatures', () => {
  const now = 1_800_000_000_000;
  const signature = signPeerRequest(secret, signed, now);

  it('holds for the request it was made for, within its validity', () => {
    expect(isPeerSignature(secret, signed, signature, now + PEER_SIGNATURE_VALIDITY_MS)).toBe(true);
    expect(isPeerSignature(secret, signed, signature, now - PEER_SIGNATURE_VALIDITY_MS)).toBe(true);
  });

  it.each([
    ['later', secret, signed, signature, now + PEER_SIGNATURE_VALIDITY_MS + 1],
    ['under another secret', createSecretKey(Buffer.from('other')), signed, signature, now],
    ['for another path', secret, { ...signed, path: '/mcp/a/c' }, signature, now],
    ['with its time changed', secret, signed, signature.replace(/^\d+/, String(now + 1)), now],
    ['cut short', secret, signed, signature.slice(0, -2), now],
    ['with a part added', secret, signed, `${signature}.x`, now],
    ['without a time', secret, signed, signature.replace(/^\d+/, ''), now],
  ])('fails %s', (_case, key, request, given, at) => {
    expect(isPeerSignature(key, request, given, at)).toBe(false);
  });
});

describe('onPeer', () => {
  it.each([
    ['/mcp/a/b?x=1', 'https://10.0.0.7:8443/mcp/a/b?x=1'],
    ['http://attacker.example:9/mcp/a/b?x=1', 'https://10.0.0.7:8443/mcp/a/b?x=1'],
    ['//attacker.example/mcp/a/b', 'https://10.0.0.7:8443/mcp/a/b'],
  ])('sends %s to the peer itself', (target, expected) => {
    expect(onPeer('https://10.0.0.7:8443', target).href).toBe(expected);
  });
});
