import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import type { RateLimitedLog } from '../common/logging/rate-limited-log.js';
import { OUTBOX_CHANNEL } from './webhook-outbox.repository.js';
import { reasonOf } from './webhook-sender.js';

/**
 * PostgreSQL: one connection that LISTENs for the NOTIFY any process's commit of notices sends,
 * and calls `wake`. A lost connection is opened again after `retryMs`; the poll covers the gap.
 */
export class OutboxListener {
  private client: pg.Client | undefined;
  private readonly stop = new AbortController();
  private running = Promise.resolve();

  constructor(
    private readonly url: string,
    private readonly wake: () => void,
    private readonly log: RateLimitedLog,
    private readonly retryMs: number,
  ) {}

  start(): void {
    this.running = this.keepListening();
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.client?.end().catch(() => undefined);
    await this.running;
  }

  private async keepListening(): Promise<void> {
    const { signal } = this.stop;
    while (!signal.aborted) {
      await this.listenUntilLost().catch((error: unknown) => {
        if (!signal.aborted) this.log.warn({ reason: reasonOf(error) }, 'plant webhook: no LISTEN');
      });
      await delay(this.retryMs, undefined, { signal }).catch(() => undefined);
    }
  }

  private async listenUntilLost(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 3_000 });
    const lost = new Promise<Error | undefined>((resolve) => {
      client.on('error', resolve);
      client.on('end', () => resolve(undefined));
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
      client.on('notification', () => this.wake());
      this.wake(); // rows committed while this process was not listening
      const reason = await lost;
      if (reason) throw reason;
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}
