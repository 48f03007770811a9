import type { IncomingHttpHeaders } from 'node:http';
import { PEER_AGENTS, PEER_CLIENT, PEER_SECRET } from '../cluster/peer-headers.js';
import type { RelayClientConfig } from '../config/relay-config.js';

/**
 * The client of a request another replica forwarded: authenticated there, named in the
 * headers, vouched for by the replicas' shared secret. Undefined when the request claims no
 * peer; 'refused' when it claims one without the secret (or with a malformed client).
 */
export function peerClient(
  headers: IncomingHttpHeaders,
  isPeerSecret: (secret: string) => boolean,
): RelayClientConfig | 'refused' | undefined {
  const secret = headers[PEER_SECRET];
  if (secret === undefined) return undefined;
  const client = headers[PEER_CLIENT];
  const agents = headers[PEER_AGENTS];
  if (typeof secret !== 'string' || !isPeerSecret(secret)) return 'refused';
  if (typeof client !== 'string' || typeof agents !== 'string') return 'refused';
  let name: string;
  try {
    name = decodeURIComponent(client);
  } catch {
    return 'refused';
  }
  if (name === '') return 'refused';
  return { name, tokenDigests: [], agents: new Set(agents.split(',').filter(Boolean)) };
}
