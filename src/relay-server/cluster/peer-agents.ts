import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Agent, type request } from 'undici';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';

// The one keep-alive pool to the other replicas. A peer's certificate must chain to this one's (one
// Secret for every pod); peers are reached by pod address, which it does not name: no name check.
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
