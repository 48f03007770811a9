import type { Logger } from 'pino';
import { DatabaseUnavailableError, isCorruption } from './database-unavailable.error.js';
import type { SqliteFileIdentity } from './sqlite-file-identity.js';

/**
 * Store faults that do not heal: the embedded store's file deleted, replaced, truncated or
 * corrupt. Once seen, until a restart, every request answers 503 and /health names it: what
 * is written from then on would not be there after a restart.
 */
export class StoreIntegrityService {
  private problem: string | undefined;

  constructor(
    private readonly file: SqliteFileIdentity | undefined,
    private readonly logger: Logger,
  ) {}

  /** The fault seen so far, without looking again (free: for every request and scrape). */
  get knownProblem(): string | undefined {
    return this.problem;
  }

  /** Looks at the files again (two stat calls) and returns the fault, if any. */
  check(): string | undefined {
    if (this.problem === undefined && this.file) {
      const problem = this.file.problem();
      if (problem) this.fail(problem);
    }
    return this.problem;
  }

  /** Throws (503) when a fault is known: before a request touches the store. */
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
