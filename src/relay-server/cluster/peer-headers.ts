import type { IncomingHttpHeaders } from 'node:http';

export const PEER_SIGNATURE = 'x-relay-peer-signature';
export const PEER_CLIENT = 'x-relay-peer-client';
export const PEER_AGENTS = 'x-relay-peer-agents';

/** Not passed on: per connection (RFC 9110 7.6.1; `expect`: the body is here), or credentials. */
const NOT_PASSED = new Set([
  'authorization',
  'connection',
  'content-length',
  'cookie',
  'expect',
  'host',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  PEER_SIGNATURE,
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

/** `target`'s path and query on the peer's origin: a forward never leaves the replicas. */
export function onPeer(peer: string, target: string): URL {
  const url = new URL(peer);
  const { pathname, search } = new URL(target, url);
  url.pathname = pathname;
  url.search = search;
  return url;
}
