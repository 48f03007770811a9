import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import { ACCEPTED_TOKEN_DIGESTS } from './accepted-tokens.js';
import { matchesAnyToken } from '../config/shared/api-tokens.js';

/** What passport-http-bearer decided about one Authorization header. */
export type BearerOutcome =
  | { kind: 'success' }
  /** `challenge` is the strategy's WWW-Authenticate text; undefined for a malformed header. */
  | { kind: 'fail'; challenge: string | undefined };

/**
 * passport-http-bearer's strategy, one instance, without passport's per-request copies and
 * closures (~17 KiB of garbage a request): it decides synchronously, so `check` reads the one
 * outcome it reports. Only the Authorization header is shown to it: a token in the query or
 * the body would end up in proxy logs and browser history, so there it is no token (401).
 */
@Injectable()
export class BearerStrategy extends Strategy<
  (token: string, done: (error: null, client: boolean) => void) => void
> {
  private outcome: BearerOutcome | undefined;

  constructor(@Inject(ACCEPTED_TOKEN_DIGESTS) digests: Buffer[]) {
    // A verify that never fails: passport's error(), which this class leaves out, is never called.
    super((token, done) => done(null, matchesAnyToken(token, digests)));
  }

  check(authorization: string | undefined): BearerOutcome {
    this.outcome = undefined;
    this.authenticate({ headers: { authorization } } as Request);
    const outcome = this.outcome;
    this.outcome = undefined;
    // verify above is synchronous; an asynchronous one would need passport's per-request objects.
    if (!outcome) throw new Error('the bearer strategy did not decide synchronously');
    return outcome;
  }

  /** The actions passport would attach to a per-request copy of the strategy. */
  success(): void {
    this.outcome = { kind: 'success' };
  }

  fail(challenge?: string | number): void {
    // fail(400) is the strategy's answer to a malformed header: no challenge, as passport.
    this.outcome = {
      kind: 'fail',
      challenge: typeof challenge === 'string' ? challenge : undefined,
    };
  }
}
