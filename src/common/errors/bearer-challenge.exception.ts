import { UnauthorizedException } from '@nestjs/common';

/** A 401 that carries its RFC 6750 `WWW-Authenticate` challenge to the exception filter. */
export class BearerChallengeException extends UnauthorizedException {
  constructor(
    message: string,
    readonly challenge: string,
  ) {
    super(message);
  }
}
