/**
 * A dependency that cannot answer now: the filter answers 503 with Retry-After and `answer`,
 * and logs `logLine` with the cause, which never reaches the client. Owners extend it.
 */
export abstract class ServiceUnavailableError extends Error {
  /** The API's message to the client. */
  abstract readonly answer: string;
  /** The warning logged for each request refused this way. */
  abstract readonly logLine: string;
}
