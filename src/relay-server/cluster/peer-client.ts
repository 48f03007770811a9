import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import type { ClientRequest } from '../auth/client-request.js';
import { unauthorized } from '../auth/oauth/challenges.js';
import { RELAY_CONFIG, type RelayClientConfig, type RelayConfig } from '../config/relay-config.js';
import { PEER_AGENTS, PEER_CLIENT, PEER_SIGNATURE } from './peer-headers.js';
import type { PeerSigned } from './peer-signature.js';
import { RelayCluster } from './relay-cluster.service.js';

type PeerRequest = Pick<ClientRequest, 'method' | 'originalUrl' | 'headers'>;

// The client another replica authenticated and signed for; null for a ping (no client),
// undefined when no peer is claimed, 'refused' when the signature does not hold.
export function peerClient(
  request: PeerRequest,
  isSigned: (signature: string, signed: PeerSigned) => boolean,
): RelayClientConfig | null | 'refused' | undefined {
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
  if (name === '') return agents === '' ? null : 'refused';
  return { name, tokenDigests: [], agents: new Set(agents.split(',').filter(Boolean)) };
}

/** Runs before every guard (main.ts), so the client guard never sees a peer; a false claim: 401. */
@Injectable()
export class SignedPeerAuthenticator implements CanActivate {
  readonly #log: RateLimitedLog;

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @Inject(LOGGER) logger: Logger,
    private readonly cluster: RelayCluster,
    @InjectMetric('relay_peer_auth_failures_total') private readonly failures: Counter,
  ) {
    this.#log = new RateLimitedLog(logger);
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<ClientRequest>();
    const client = peerClient(request, (sig, signed) => this.cluster.isPeerSigned(sig, signed));
    if (client === undefined) return true;
    if (client !== 'refused') {
      request.fromPeer = true;
      if (client) request.relayClient = client;
      return true;
    }
    this.failures.inc();
    this.#log.warn({}, 'refused a request claiming to come from another relay replica');
    throw unauthorized(this.config.oauth, String(request.params.agent ?? ''), 'invalid_token');
  }
}
