import type { IncomingHttpHeaders } from 'node:http';
import { PEER_AGENTS, PEER_CLIENT, PEER_SIGNATURE } from '../cluster/peer-headers.js';
import type { PeerSigned } from '../cluster/peer-signature.js';
import type { RelayClientConfig } from '../config/relay-config.js';

/** The parts of a request a peer's signature covers. */
export interface PeerRequest {
  method: string;
  originalUrl: string;
  headers: IncomingHttpHeaders;
}

/**
 * The client of a request another replica forwarded: authenticated there, named in the
 * headers, signed with the replicas' shared secret. Undefined when the request claims no peer;
 * 'refused' when its signature does not hold (or its client is malformed).
 */
export function peerClient(
  request: PeerRequest,
  isSigned: (signature: string, signed: PeerSigned) => boolean,
): RelayClientConfig | 'refused' | undefined {
  const { headers } = request;
  const signature = headers[PEER_SIGNATURE];
  if (signature === undefined) return undefined;
  const client = headers[PEER_CLIENT];
  const agents = headers[PEER_AGENTS];
  const session = headers['mcp-session-id'] ?? '';
  if (typeof signature !== 'string' || typeof client !== 'string') return 'refused';
  if (typeof agents !== 'string' || typeof session !== 'string') return 'refused';
  const signed = { method: request.method, path: request.originalUrl, client, agents, session };
  if (!isSigned(signature, signed)) return 'refused';
  let name: string;
  try {
    name = decodeURIComponent(client);
  } catch {
    return 'refused';
  }
  if (name === '') return 'refused';
  return { name, tokenDigests: [], agents: new Set(agents.split(',').filter(Boolean)) };
}
