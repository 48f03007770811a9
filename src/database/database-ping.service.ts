import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { orTimeout } from '../common/async/or-timeout.js';
import { DatabaseUnavailableError, isCorruption } from './database-unavailable.error.js';
import type { Database } from './database.types.js';
import type { SqliteFileIdentity } from './sqlite-file-identity.js';
import type { StoreProbe } from './store-probe.js';

export interface PingResult {
  up: boolean;
  error?: string;
}

/**
 * The store's health: its probe raced against a timeout, so a hung database is a fast "down"
 * (the last result feeds `db_up` without a query), and the faults that do not heal: the
 * embedded store's file deleted, replaced, truncated or corrupt. Once such a fault is seen,
 * until a restart, every request answers 503 and /health names it (`select 1` still answers
 * from a deleted file): what is written from then on would not be there after a restart.
 */
export class DatabasePingService {
  private last: PingResult = { up: true };
  private problem: string | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly probe: StoreProbe,
    private readonly file: SqliteFileIdentity | undefined,
    private readonly logger: Logger,
  ) {}

  get lastResult(): PingResult {
    return this.problem === undefined ? this.last : { up: false, error: this.problem };
  }

  async ping(timeoutMs: number): Promise<PingResult> {
    const problem = this.check();
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

  /** Looks at the files again (two stat calls) and returns the fault, if any. */
  check(): string | undefined {
    if (this.problem === undefined && this.file) {
      const problem = this.file.problem();
      if (problem) this.fail(problem);
    }
    return this.problem;
  }

  /** Throws (503) when a fault is known (no new look): before a request touches the store. */
  assertNoKnownProblem(): void {
    if (this.problem !== undefined) throw new DatabaseUnavailableError(new Error(this.problem));
  }

  /** Throws (503) unless a restart would open the files written: before and after each write. */
  assertDurable(): void {
    const problem = this.check();
    if (problem !== undefined) throw new DatabaseUnavailableError(new Error(problem));
  }

  /** Notes a corruption error seen by a query (SQLITE_CORRUPT, SQLITE_NOTADB). */
  observe(error: unknown): void {
    if (this.problem === undefined && isCorruption(error)) {
      const code = (error as { code: string }).code;
      const where = this.file ? `the database file ${this.file.file}` : 'the database';
      this.fail(
        `${where} is corrupt (${code}: ${(error as Error).message}); restore it from a backup`,
      );
    }
  }

  private fail(problem: string): void {
    this.problem = problem;
    this.logger.error({ problem }, 'store integrity lost: every request answers 503 until restart');
  }
}
