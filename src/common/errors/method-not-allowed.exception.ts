import { HttpStatus } from '@nestjs/common';
import { HttpExceptionWithHeaders } from './http-exception-with-headers.js';

/** 405 for a method a known path does not offer, with the `Allow` header RFC 9110 asks for. */
export class MethodNotAllowedException extends HttpExceptionWithHeaders {
  constructor(method: string, path: string, allowed: string[]) {
    super(
      HttpStatus.METHOD_NOT_ALLOWED,
      `${method} is not allowed on ${path}; use ${allowed.join(', ')}`,
      {
        Allow: allowed.join(', '),
      },
    );
  }
}
