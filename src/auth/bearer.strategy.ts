import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-http-bearer';
import { ACCEPTED_TOKEN_DIGESTS } from './accepted-tokens.js';
import { matchesAnyToken } from './api-tokens.js';

/** An API client authenticated by one of the configured tokens. */
export interface ApiClient {
  kind: 'api-token';
}

@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(@Inject(ACCEPTED_TOKEN_DIGESTS) private readonly digests: Buffer[]) {
    super();
  }

  validate(token: string): ApiClient | false {
    return matchesAnyToken(token, this.digests) ? { kind: 'api-token' } : false;
  }
}
