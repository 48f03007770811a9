import { ServiceUnavailableError } from '../common/errors/service-unavailable.error.js';

/** The store cannot take the request now (unreachable, full, locked, lost): 503, to retry. */
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

/** SQLite's "the file is damaged": 503 like an outage (the row may exist), but it does not pass. */
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
    // SQLSTATE classes 08 (connection), 57P (shutdown, crash) and 53 (resources); 57014, the
    // statement timeout; 25006, a read-only server, as a standby is right after a failover.
    if (/^(08|57P|57014|53|25006$)/.test(code)) return true;
  }
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connect ECONNREFUSED|Query read timeout/i.test(
    error.message,
  );
}
