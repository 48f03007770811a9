/**
 * Baseline (a2): the raw server with group commit, inserts that arrive while the loop is busy
 * share one transaction and one fsync. The ceiling of durable writes on this disk.
 */
import { startRawServer } from './raw-server.mjs';

await startRawServer({ group: true });
