import type { Logger } from 'pino';
import { DatabaseUnavailableError, isCorruption } from './database-unavailable.error.js';
import type { SqliteFileIdentity } from './sqlite-file-identity.js';

/**
 * Faults of the store that do not heal by themselves: the embedded store's file deleted,
 * replaced or truncated while open, or found corrupt. Once one is seen it stays (until a restart): every
 * request answers 503, `/health` fails naming it, and no write is acknowledged, since nothing
 * written from then on would be there after a restart. PostgreSQL has no file to watch; a
 * corrupt page there is the server's to report.
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

  /**
   * Throws (503) unless the files a restart will open are the ones written, whole: called
   * before each write (so a refused write is not found after a restart) and after each commit,
   * before any of its writes is acknowledged.
   */
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
