/**
 * A dependency that cannot answer now: the filter answers 503 with Retry-After and `answer`,
 * and logs `logLine` with the cause, which never reaches the client. Owners extend it.
 */
export abstract class ServiceUnavailableError extends Error {
  abstract readonly answer: string;
  abstract readonly logLine: string;
}
