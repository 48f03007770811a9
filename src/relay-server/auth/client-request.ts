import type { Request } from 'express';
import type { RelayClientConfig } from '../config/relay-config.js';

/** `fromPeer`: another replica forwarded it, the client already authenticated there. */
export type ClientRequest = Request & { relayClient?: RelayClientConfig; fromPeer?: boolean };

/**
 * Recognises a request another relay replica forwarded. The cluster provides it (replicas
 * sign what they forward); auth only asks, so it never needs to know the cluster.
 */
export abstract class PeerAuthenticator {
  abstract clientOf(request: ClientRequest): RelayClientConfig | undefined;
}
