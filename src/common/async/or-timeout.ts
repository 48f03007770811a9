import { setTimeout as delay } from 'node:timers/promises';

/** What `work` settles with, or 'timeout' after `ms`; the timer is cleared either way. */
export async function orTimeout<T>(work: Promise<T>, ms: number): Promise<T | 'timeout'> {
  const timer = new AbortController();
  try {
    // The aborted delay's rejection is race's to ignore: it settled already.
    return await Promise.race([work, delay(ms, 'timeout' as const, { signal: timer.signal })]);
  } finally {
    timer.abort();
  }
}
