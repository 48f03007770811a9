import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Agent, type request } from 'undici';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';

// One keep-alive pool to the other replicas. A peer's certificate must chain to ours (one Secret
// for all pods); peers are dialled by pod address, which no certificate names: chain, not name.
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
