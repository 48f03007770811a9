import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Agent, type request } from 'undici';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';

/**
 * The one pool of keep-alive connections to the other replicas, for every forward, call and
 * ping. Over TLS a peer's certificate must chain to this replica's own certificate file (every
 * pod mounts the same Secret); peers are reached by pod address, which the certificate does
 * not name, so the chain is checked, not the name.
 */
@Injectable()
export class PeerDispatcher extends Agent implements OnModuleDestroy {
  constructor(@Inject(RELAY_CONFIG) config: Pick<RelayConfig, 'tls'>) {
    super({
      connect: {
        ...(config.tls && { ca: config.tls.cert, allowPartialTrustChain: true }),
        checkServerIdentity: () => undefined,
        rejectUnauthorized: true,
      },
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.destroy();
  }
}

/** A refused connection: nothing reached the peer. undici may wrap the socket's error. */
export function refusedConnection(error: unknown): boolean {
  const { code, cause } = (error ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  return code === 'ECONNREFUSED' || cause?.code === 'ECONNREFUSED';
}

/** undici's `request` options: a dispatcher, method, headers, body, timeouts. */
export type RequestOptions = NonNullable<Parameters<typeof request>[1]>;
