import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import { errors, jwtVerify } from 'jose';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { LOGGER } from '../../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../../common/logging/rate-limited-log.js';
import {
  RELAY_CONFIG,
  type RelayClientConfig,
  type RelayConfig,
  type RelayOAuthConfig,
} from '../../config/relay-config.js';
import { DocumentTooLargeError } from './capped-fetch.js';
import {
  idpMisconfigured,
  idpUnavailable,
  insufficientScope,
  type RefusalReason,
} from './challenges.js';
import { IdpUnavailableError, IssuerKeys } from './issuer-keys.js';
import { IdpConfigurationError } from './issuer-metadata.js';
import { grantedAgents, subjectOf } from './token-grants.js';

/** Asymmetric signatures only: never `none`, never an HMAC keyed with a public key. */
const ALGORITHMS = 'RS256 RS384 RS512 PS256 PS384 PS512 ES256 ES384 ES512 EdDSA Ed25519'.split(' ');

export class TokenRefusedError extends Error {
  constructor(readonly reason: RefusalReason) {
    super(reason);
  }
}

// Verifies JWT access tokens locally (RFC 9068); opaque tokens are refused. 403 (step-up)
// without the agent's scope, 503 while the IdP is unreachable.
@Injectable()
export class AccessTokenVerifier implements OnApplicationBootstrap {
  readonly oauth: RelayOAuthConfig | undefined;
  readonly #keys: IssuerKeys | undefined;
  readonly #knownAgents: ReadonlySet<string>;
  readonly #log: RateLimitedLog;
  /** Refused clients apart, so that they do not hide an IdP failure. */
  readonly #refusalLog: RateLimitedLog;

  constructor(
    @Inject(RELAY_CONFIG) config: RelayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @InjectMetric('relay_oauth_jwks_fetch_failures_total') private readonly fetchFailures: Counter,
    @InjectMetric('relay_oauth_documents_too_large_total') private readonly tooLarge: Counter,
    @InjectMetric('relay_oauth_refusals_total') private readonly refusals: Counter<'reason'>,
  ) {
    this.oauth = config.oauth;
    this.#knownAgents = new Set(config.agents.map((a) => a.name));
    this.#log = new RateLimitedLog(logger);
    this.#refusalLog = new RateLimitedLog(logger);
    const onFetchFailure = (error: unknown) => this.#fetchFailed(error);
    this.#keys = config.oauth && new IssuerKeys({ ...config.oauth, onFetchFailure });
  }

  /** Not awaited: an IdP that is down at start is a warning, not a relay that cannot start. */
  onApplicationBootstrap(): void {
    const issuer = this.oauth?.issuer;
    void this.#keys?.check().then((usable) => {
      if (usable) this.logger.info({ issuer }, 'identity provider metadata checked');
    });
  }

  #fetchFailed(error: unknown): void {
    this.fetchFailures.inc();
    if (error instanceof DocumentTooLargeError) this.tooLarge.inc();
    const fields = { issuer: this.oauth?.issuer, reason: messageOf(error) };
    // A wrong setting is not an outage: say so loudly, every time it is found.
    if (error instanceof IdpConfigurationError) {
      this.logger.error(fields, 'identity provider configuration error');
    } else {
      this.#log.warn(fields, 'identity provider fetch failed');
    }
  }

  /** `oauth:<sub>`, a name no RELAY_CLIENTS entry can have; a refusal is counted and logged. */
  async clientOf(token: string | undefined, agent: string): Promise<RelayClientConfig> {
    const { oauth } = this;
    if (!oauth) throw new TokenRefusedError('invalid_token');
    // A missing token is how every OAuth client starts: counted, not worth a line.
    if (token === undefined) {
      throw this.#refused('missing_token', new TokenRefusedError('missing_token'), false);
    }
    try {
      const { subject, agents } = await this.#verify(token);
      if (!agents.has(agent)) {
        const refusal = insufficientScope(oauth, agent);
        throw this.#refused('insufficient_scope', refusal, { subject });
      }
      return { name: `oauth:${subject}`, tokenDigests: [], agents };
    } catch (error) {
      if (error instanceof TokenRefusedError) throw this.#refused(error.reason, error);
      if (error instanceof IdpUnavailableError) {
        throw this.#refused('idp_unavailable', idpUnavailable(oauth));
      }
      // Logged loudly already (#fetchFailed).
      if (error instanceof IdpConfigurationError) {
        throw this.#refused('idp_misconfigured', idpMisconfigured(), false);
      }
      throw error;
    }
  }

  #refused<E>(reason: RefusalReason, error: E, fields: object | false = {}): E {
    this.refusals.inc({ reason });
    if (fields) this.#refusalLog.warn({ reason, ...fields }, 'MCP client refused');
    return error;
  }

  async #verify(token: string): Promise<{ subject: string; agents: Set<string> }> {
    if (!this.oauth || !this.#keys) throw new TokenRefusedError('invalid_token');
    const { oauth } = this;
    try {
      const { payload } = await jwtVerify(token, this.#keys.getKey, {
        issuer: oauth.issuer,
        audience: [oauth.resource, `${oauth.resource}/`],
        algorithms: ALGORITHMS,
        clockTolerance: oauth.clockSkewSeconds,
        requiredClaims: ['exp', 'sub'],
        ...(oauth.requireAtJwtTyp && { typ: 'at+jwt' }),
      });
      const subject = subjectOf(payload);
      if (subject === undefined || issuedInFuture(payload.iat, oauth.clockSkewSeconds)) {
        throw new TokenRefusedError('invalid_token');
      }
      const agents = grantedAgents(payload, { ...oauth, knownAgents: this.#knownAgents });
      return { subject, agents };
    } catch (error) {
      if (PASSED_ON.some((type) => error instanceof type)) throw error;
      throw new TokenRefusedError(reasonOf(error));
    }
  }
}

const PASSED_ON = [IdpUnavailableError, IdpConfigurationError, TokenRefusedError];

/** jose checks `iat` only against a maximum age; a token from the future is not one yet. */
function issuedInFuture(iat: number | undefined, leewaySeconds: number): boolean {
  return iat !== undefined && iat > Date.now() / 1000 + leewaySeconds;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

function reasonOf(error: unknown): RefusalReason {
  if (error instanceof errors.JWTExpired) return 'expired';
  if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'aud') {
    return 'wrong_audience';
  }
  if (error instanceof errors.JWKSNoMatchingKey) return 'unknown_key';
  if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'typ') {
    return 'not_an_access_token';
  }
  return 'invalid_token';
}
