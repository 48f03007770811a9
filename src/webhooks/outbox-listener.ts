import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import type { RateLimitedLog } from '../common/logging/rate-limited-log.js';
import { OUTBOX_CHANNEL } from './webhook-outbox.repository.js';
import { reasonOf } from './webhook-sender.js';

/** PostgreSQL: LISTENs for commits of notices until `signal`, reconnecting after `retryMs`. */
export async function listenForNotices(
  url: string,
  signal: AbortSignal,
  wake: () => void,
  log: RateLimitedLog,
  retryMs: number,
): Promise<void> {
  while (!signal.aborted) {
    await listenUntilLost(url, signal, wake).catch((error: unknown) => {
      if (!signal.aborted) log.warn({ reason: reasonOf(error) }, 'plant webhook: no LISTEN');
    });
    await delay(retryMs, undefined, { signal }).catch(() => undefined);
  }
}

async function listenUntilLost(url: string, signal: AbortSignal, wake: () => void): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  const lost = new Promise<Error | undefined>((resolve) => {
    client.on('error', resolve);
    client.on('end', () => resolve(undefined));
  });
  const stop = () => void client.end().catch(() => undefined);
  signal.addEventListener('abort', stop);
  try {
    // pg's connect() never settles when end() is called while it connects: a stop right after
    // the start would wait for it forever.
    await Promise.race([client.connect(), once(signal, 'abort')]);
    if (signal.aborted) return;
    await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
    client.on('notification', wake);
    wake(); // rows committed while this process was not listening
    const reason = await lost;
    if (reason) throw reason;
  } finally {
    signal.removeEventListener('abort', stop);
    await client.end().catch(() => undefined);
  }
}
