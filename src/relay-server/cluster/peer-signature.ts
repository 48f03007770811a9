import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';

/** What a replica vouches for when it passes a request to another one. */
export interface PeerSigned {
  method: string;
  /** The request target as sent: path and query, never a host. */
  path: string;
  client: string;
  agents: string;
  /** The session header, or '' for a request outside a session. */
  session: string;
}

/** A signature is valid this long either side of its time (clocks differ by seconds). */
export const PEER_SIGNATURE_VALIDITY_MS = 30_000;

/** `<unix ms>.<HMAC-SHA256>` of request and time: a copied header buys this one, for seconds. */
export function signPeerRequest(secret: KeyObject, signed: PeerSigned, now = Date.now()): string {
  return `${now}.${digest(secret, signed, now).toString('base64url')}`;
}

export function isPeerSignature(
  secret: KeyObject,
  signed: PeerSigned,
  signature: string,
  now = Date.now(),
): boolean {
  const [time, mac, ...rest] = signature.split('.');
  const at = Number(time);
  if (rest.length > 0 || mac === undefined || !/^\d{1,15}$/.test(time ?? '')) return false;
  if (Math.abs(now - at) > PEER_SIGNATURE_VALIDITY_MS) return false;
  const given = Buffer.from(mac, 'base64url');
  const expected = digest(secret, signed, at);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function digest(secret: KeyObject, s: PeerSigned, at: number): Buffer {
  const fields = [s.method, s.path, s.client, s.agents, s.session, String(at)];
  return createHmac('sha256', secret).update(fields.join('\n')).digest();
}
