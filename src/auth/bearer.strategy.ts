import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import { ACCEPTED_TOKEN_DIGESTS } from './accepted-tokens.js';
import { matchesAnyToken } from '../config/api-tokens.js';

/** An API client authenticated by one of the configured tokens. */
export interface ApiClient {
  kind: 'api-token';
}

/**
 * passport-http-bearer also takes the token from `?access_token=` and from an `access_token`
 * body field (RFC 6750 2.2, 2.3), where it ends up in proxy logs and browser history. Only the
 * Authorization header is shown to it here: a token anywhere else is no token (401).
 */
type Verify = (token: string, done: (error: unknown, client?: ApiClient | false) => void) => void;

class HeaderOnlyBearerStrategy extends Strategy<Verify> {
  override authenticate(request: Request, options?: object): void {
    const headersOnly = { headers: { authorization: request.headers.authorization } };
    super.authenticate(headersOnly as unknown as Request, options);
  }
}

@Injectable()
export class BearerStrategy extends PassportStrategy(HeaderOnlyBearerStrategy, 'bearer') {
  constructor(@Inject(ACCEPTED_TOKEN_DIGESTS) private readonly digests: Buffer[]) {
    super();
  }

  validate(token: string): ApiClient | false {
    return matchesAnyToken(token, this.digests) ? { kind: 'api-token' } : false;
  }
}
