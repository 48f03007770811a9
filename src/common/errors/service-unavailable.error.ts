/**
 * Something the service needs cannot answer right now (the database). The exception filter
 * answers 503 with Retry-After and `answer`, and logs a warning with `logLine` and the cause's
 * message; the cause itself never reaches the client. The feature that owns the dependency
 * extends this (DatabaseUnavailableError), so the filter needs no feature's error type.
 */
export abstract class ServiceUnavailableError extends Error {
  /** The API's message to the client. */
  abstract readonly answer: string;
  /** The warning logged for each request refused this way. */
  abstract readonly logLine: string;
}
