import type { RelayClientConfig } from '../config/relay-config.js';
import type { ClientAuthMethod } from './client-request.js';
import { ownerOf } from './token-owner.js';

/** A token of RELAY_CLIENTS: its client, whatever the agent (the route checks that). */
export class StaticTokens implements ClientAuthMethod {
  constructor(private readonly clients: readonly RelayClientConfig[]) {}

  clientOf(token: string | undefined): Promise<RelayClientConfig | undefined> {
    return Promise.resolve(ownerOf(token, this.clients));
  }
}
