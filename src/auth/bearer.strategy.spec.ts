import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { Passport } from 'passport';
import { Strategy } from 'passport-http-bearer';
import { describe, expect, it } from 'vitest';
import { matchesAnyToken, sha256 } from '../config/shared/api-tokens.js';
import { type BearerOutcome, BearerStrategy } from './bearer.strategy.js';

const token = randomBytes(24).toString('hex');
const digests = [sha256(token)];

/** What passport itself (its middleware and a per-request strategy) decides, as before. */
function throughPassport(authorization: string | undefined): Promise<BearerOutcome> {
  const passport = new Passport();
  passport.use(
    'bearer',
    new Strategy((presented: string, done: (e: unknown, user?: unknown) => void) =>
      done(null, matchesAnyToken(presented, digests) ? { kind: 'api-token' } : false),
    ),
  );
  return new Promise((resolve, reject) => {
    const middleware = passport.authenticate(
      'bearer',
      { session: false },
      (error: unknown, client: unknown, info: unknown) => {
        if (error) reject(new Error('passport reported an error', { cause: error }));
        else if (client) resolve({ kind: 'success' });
        else resolve({ kind: 'fail', challenge: typeof info === 'string' ? info : undefined });
      },
    ) as (req: Request, res: Response, next: (e?: unknown) => void) => void;
    middleware({ headers: { authorization } } as Request, {} as Response, reject);
  });
}

describe('BearerStrategy.check', () => {
  const strategy = new BearerStrategy(digests);

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['the scheme alone', 'Bearer'],
    ['the scheme and a space', 'Bearer '],
    ['a lower-case scheme alone', 'bearer'],
    ['two spaces before the token', `Bearer  ${token}`],
    ['a token and more', `Bearer ${token} extra`],
    ['a leading space', ` Bearer ${token}`],
    ['a tab instead of a space', `Bearer\t${token}`],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['another scheme with the token', `Token ${token}`],
    ['the valid token', `Bearer ${token}`],
    ['the valid token, lower-case scheme', `bearer ${token}`],
    ['the valid token, upper-case scheme', `BEARER ${token}`],
    ['the token in upper case', `Bearer ${token.toUpperCase()}`],
    ['a prefix of the token', `Bearer ${token.slice(0, 40)}`],
    ['a wrong token', 'Bearer wrong-token-wrong-token-wrong-token'],
  ])('decides %s exactly as passport does', async (_case, authorization) => {
    const expected = await throughPassport(authorization);
    expect(strategy.check(authorization)).toEqual(expected);
  });

  it('accepts the valid token and refuses a wrong one with invalid_token', () => {
    expect(strategy.check(`Bearer ${token}`).kind).toBe('success');
    const refused = strategy.check('Bearer nope');
    expect(refused.kind === 'fail' && refused.challenge).toContain('error="invalid_token"');
  });
});
