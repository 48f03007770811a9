/** Baseline (a1): the raw server with one transaction and one commit per request. */
import { startRawServer } from './raw-server.mjs';

await startRawServer({ group: false });
