import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { RelayConfig } from '../config/relay-config.js';

/** Keep-alive connections to the other replicas, plain or TLS as the relay port is. */
export interface PeerAgents {
  http: HttpAgent;
  https: HttpsAgent;
}

/**
 * Over TLS a peer must present a certificate that chains to this replica's own certificate
 * file (every pod mounts the same Secret; its intermediates count as anchors too). Peers are
 * reached by pod address, which the certificate does not name: the chain is checked, not the
 * name. A listener with another certificate gets no request and no signature.
 */
export function peerAgents(tls: RelayConfig['tls']): PeerAgents {
  return {
    http: new HttpAgent({ keepAlive: true }),
    https: new HttpsAgent({
      keepAlive: true,
      ...(tls && { ca: tls.cert, allowPartialTrustChain: true }),
      checkServerIdentity: () => undefined,
    }),
  };
}
