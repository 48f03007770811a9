import type { Request } from 'express';
import type { RelayClientConfig } from '../config/relay-config.js';

/** `fromPeer`: another replica forwarded it, the client already authenticated there. */
export type ClientRequest = Request & { relayClient?: RelayClientConfig; fromPeer?: boolean };
