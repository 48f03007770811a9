import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { RelayClientConfig } from '../config/relay-config.js';

/** `fromPeer`: another replica forwarded it, the client already authenticated there. */
export type ClientRequest = Request & { relayClient?: RelayClientConfig; fromPeer?: boolean };

/** One way an MCP client authenticates; ClientAuthGuard asks each in turn. */
export interface ClientAuthMethod {
  /** `token`'s client (none sent: undefined); undefined when not this method's, else throws. */
  clientOf(token: string | undefined, agent: string): Promise<RelayClientConfig | undefined>;
}

/**
 * The guard main.ts runs before every controller's: it authenticates what another replica
 * sends (the cluster implements it), so the client guard never sees a peer.
 */
export abstract class PeerAuthenticator implements CanActivate {
  abstract canActivate(context: ExecutionContext): boolean;
}
