import type { Kysely } from 'kysely';
import { orTimeout } from '../common/async/or-timeout.js';
import type { Database } from './database.types.js';
import type { StoreProbe } from './store-probe.js';
import type { StoreIntegrityService } from './store-integrity.service.js';

export interface PingResult {
  up: boolean;
  error?: string;
}

/**
 * The store's probe raced against a timeout, so a hung database is a fast "down"; the last
 * result feeds `db_up` without a query. A known fault of the store's files is "down" whatever
 * the ping says: `select 1` still answers from a deleted file. Made by DatabaseModule.
 */
export class DatabasePingService {
  private last: PingResult = { up: true };

  constructor(
    private readonly db: Kysely<Database>,
    private readonly integrity: StoreIntegrityService,
    private readonly probe: StoreProbe,
  ) {}

  get lastResult(): PingResult {
    const problem = this.integrity.knownProblem;
    return problem === undefined ? this.last : { up: false, error: problem };
  }

  async ping(timeoutMs: number): Promise<PingResult> {
    const problem = this.integrity.check();
    if (problem !== undefined) return (this.last = { up: false, error: problem });
    try {
      const outcome = await orTimeout(this.probe(this.db), timeoutMs);
      const error = `no answer within ${timeoutMs} ms`;
      this.last = outcome === 'timeout' ? { up: false, error } : { up: true };
    } catch (error) {
      this.last = { up: false, error: error instanceof Error ? error.message : String(error) };
    }
    return this.last;
  }

  /** Requests report what they saw, so `db_up` follows the store between health checks. */
  record(up: boolean, error?: string): void {
    this.last = up ? { up } : { up, error: error ?? 'query failed' };
  }
}
