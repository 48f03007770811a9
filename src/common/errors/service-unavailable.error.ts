/** A dependency down now: 503 with Retry-After and `answer`; the cause is logged, never sent. */
export abstract class ServiceUnavailableError extends Error {
  abstract readonly answer: string;
  abstract readonly logLine: string;
}
