import type { IncomingHttpHeaders } from 'node:http';

/** Headers one replica adds to a request it forwards to another. */
export const PEER_SECRET = 'x-relay-peer-secret';
export const PEER_CLIENT = 'x-relay-peer-client';
export const PEER_AGENTS = 'x-relay-peer-agents';

/** Not passed on either way: per connection (RFC 9110 7.6.1), or the client's credentials. */
const NOT_PASSED = new Set([
  'authorization',
  'connection',
  'content-length',
  'cookie',
  'host',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  PEER_SECRET,
  PEER_CLIENT,
  PEER_AGENTS,
]);

export function passedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const passed: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !NOT_PASSED.has(name)) passed[name] = value;
  }
  return passed;
}
