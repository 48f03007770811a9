import { ServiceUnavailableError } from '../common/errors/service-unavailable.error.js';

/**
 * The store cannot be reached or cannot take the write right now (PostgreSQL down or
 * restarting, a connection dropped, SQLite's disk full or locked, the store's file deleted,
 * replaced or corrupt). The API answers 503 and the client may retry; nothing is acknowledged
 * that was not committed.
 */
export class DatabaseUnavailableError extends ServiceUnavailableError {
  readonly answer = 'the database is unavailable; try again later';
  readonly logLine = 'database unavailable';

  constructor(cause: unknown) {
    super('the database is unavailable', { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL)/;
const SQLITE_CORRUPTION = /^SQLITE_(CORRUPT|NOTADB)/;

/**
 * True for SQLite's "the file is damaged" errors. They answer 503 like an outage (never a 404
 * or a 500: the row may well exist) and, unlike one, they do not pass: see StoreIntegrityService.
 */
export function isCorruption(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && SQLITE_CORRUPTION.test(code);
}

/** True for errors that mean "the database is not there", as opposed to a bad query. */
export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || SQLITE_UNAVAILABLE.test(code) || SQLITE_CORRUPTION.test(code))
      return true;
    // PostgreSQL SQLSTATE classes 08 (connection exception), 57P (operator intervention:
    // shutdown, crash, cannot connect now) and 53 (insufficient resources).
    // 57014: statement_timeout. 25006: a read-only server, e.g. a standby not yet promoted
    // that the primary's address still reaches right after a failover.
    if (/^(08|57P|57014|53|25006$)/.test(code)) return true;
  }
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connect ECONNREFUSED|Query read timeout/i.test(
    error.message,
  );
}
