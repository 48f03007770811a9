import { HttpStatus } from '@nestjs/common';
import { HttpExceptionWithHeaders } from './http-exception-with-headers.js';

/** A 401 that carries its RFC 6750 `WWW-Authenticate` challenge. */
export class BearerChallengeException extends HttpExceptionWithHeaders {
  constructor(message: string, challenge: string) {
    super(HttpStatus.UNAUTHORIZED, message, { 'WWW-Authenticate': challenge });
  }
}
