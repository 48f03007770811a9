import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors,
  type FlattenedJWSInput,
  type JWSHeaderParameters,
  type RemoteJWKSet,
} from 'jose';
import type { RelayOAuthConfig } from '../../config/relay-config.js';
import { cappedFetch } from './capped-fetch.js';
import { discoverJwksUri, IdpConfigurationError } from './issuer-metadata.js';

/** The identity provider cannot be reached and the token needs it: the client should retry. */
export class IdpUnavailableError extends Error {}

/** `onFetchFailure` runs once per failed fetch, however many requests waited for it. */
type IssuerKeysOptions = Pick<
  RelayOAuthConfig,
  'issuer' | 'jwksRefreshMs' | 'fetchTimeoutMs' | 'maxDocumentBytes'
> & { onFetchFailure: (error: unknown) => void; now?: () => number };

/** jose's own fetch failures (timeout, non-200, not a key set) and the network's TypeError. */
const FETCH_FAILURES = new Set(['ERR_JOSE_GENERIC', 'ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID']);
const isFetchFailure = (error: unknown) =>
  !(error instanceof errors.JOSEError) || FETCH_FAILURES.has(error.code);

// An unknown `kid` refetches at most once per jwksRefreshMs. If a fetch fails, old keys still
// verify, a new one gets IdpUnavailableError, and the IdP is not hammered for jwksRefreshMs.
export class IssuerKeys {
  #remote: RemoteJWKSet | undefined;
  #discovery: Promise<RemoteJWKSet> | undefined;
  #failedAt = Number.NEGATIVE_INFINITY;
  #lastFailure: unknown;
  readonly #now: () => number;

  constructor(private readonly options: IssuerKeysOptions) {
    this.#now = options.now ?? Date.now;
  }

  readonly getKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    const remote = this.#remote ?? (await this.#discover());
    if (this.#backingOff()) return this.#cached(remote, header, token);
    try {
      return await remote(header, token);
    } catch (error) {
      if (!isFetchFailure(error)) throw error;
      this.#failed(error);
      return this.#cached(remote, header, token);
    }
  };

  #backingOff(): boolean {
    return this.#now() - this.#failedAt < this.options.jwksRefreshMs;
  }

  /** jose hands one failed fetch to every request that waited for it: report it once. */
  #failed(error: unknown): void {
    if (error === this.#lastFailure) return;
    this.#lastFailure = error;
    this.#failedAt = this.#now();
    this.options.onFetchFailure(error);
  }

  async #cached(remote: RemoteJWKSet, header: JWSHeaderParameters, token: FlattenedJWSInput) {
    const jwks = remote.jwks();
    if (!jwks) throw new IdpUnavailableError('the signing keys cannot be fetched');
    try {
      return await createLocalJWKSet(jwks)(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey) {
        throw new IdpUnavailableError('the signing key is new and the key set cannot be fetched');
      }
      throw error;
    }
  }

  /** Fetches the issuer's metadata now (at start), so a wrong setting shows before a client. */
  check(): Promise<boolean> {
    return this.#discover().then(Boolean, () => false);
  }

  /** Finds the jwks_uri once; a failure is retried after jwksRefreshMs, refused until then. */
  #discover(): Promise<RemoteJWKSet> {
    if (this.#backingOff()) return Promise.reject(this.#discoveryRefusal());
    this.#discovery ??= discoverJwksUri(this.options).then(
      (jwksUri) => (this.#remote = this.#remoteKeys(jwksUri)),
      (error: unknown) => {
        this.#discovery = undefined;
        this.#failed(error);
        throw this.#discoveryRefusal();
      },
    );
    return this.#discovery;
  }

  #discoveryRefusal(): Error {
    return this.#lastFailure instanceof IdpConfigurationError
      ? this.#lastFailure
      : new IdpUnavailableError('the issuer metadata cannot be fetched');
  }

  #remoteKeys(jwksUri: URL): RemoteJWKSet {
    const { jwksRefreshMs, fetchTimeoutMs, maxDocumentBytes } = this.options;
    return createRemoteJWKSet(jwksUri, {
      cooldownDuration: jwksRefreshMs,
      timeoutDuration: fetchTimeoutMs,
      [customFetch]: (url, init) => cappedFetch(url, init, maxDocumentBytes),
    });
  }
}
