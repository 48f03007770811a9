import { HttpException } from '@nestjs/common';

/** An HTTP error whose answer needs headers (WWW-Authenticate, Allow); the filter sets them. */
export class HttpExceptionWithHeaders extends HttpException {
  constructor(
    status: number,
    message: string,
    readonly headers: Record<string, string>,
  ) {
    super(message, status);
  }
}
