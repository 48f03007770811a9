import { Inject, Injectable } from '@nestjs/common';
import type { Kysely } from 'kysely';
import type { Database } from './database.types.js';
import { KYSELY } from './database.tokens.js';
import { STORE_PROBE, type StoreProbe } from './store-probe.js';
import { StoreIntegrityService } from './store-integrity.service.js';

export interface PingResult {
  up: boolean;
  error?: string;
}

/**
 * The store's probe raced against a timeout, so a hung database is a fast "down"; the last
 * result feeds `db_up` without a query. A known fault of the store's files is "down" whatever
 * the ping says: `select 1` still answers from a deleted file.
 */
@Injectable()
export class DatabasePingService {
  private last: PingResult = { up: true };

  constructor(
    @Inject(KYSELY) private readonly db: Kysely<Database>,
    private readonly integrity: StoreIntegrityService,
    @Inject(STORE_PROBE) private readonly probe: StoreProbe,
  ) {}

  get lastResult(): PingResult {
    const problem = this.integrity.knownProblem;
    return problem === undefined ? this.last : { up: false, error: problem };
  }

  async ping(timeoutMs: number): Promise<PingResult> {
    const problem = this.integrity.check();
    if (problem !== undefined) return (this.last = { up: false, error: problem });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.probe(this.db), timeout]);
      this.last = { up: true };
    } catch (error) {
      this.last = { up: false, error: error instanceof Error ? error.message : String(error) };
    } finally {
      clearTimeout(timer);
    }
    return this.last;
  }

  /** Requests report what they saw, so `db_up` follows the store between health checks. */
  record(up: boolean, error?: string): void {
    this.last = up ? { up } : { up, error: error ?? 'query failed' };
  }
}
