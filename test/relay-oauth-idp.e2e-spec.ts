import { importJWK, type JWK, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logLines, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { type HostileIdp, startHostileIdp } from './fixtures/relay-server/hostile-idp.js';
import { signingKey, startTestIdp, type TestIdp } from './fixtures/relay-server/oauth-idp.js';
import { newToken } from './support/app-process.js';
import { closedPort } from './support/closed-port.js';
import { loggedSoFar } from './support/logged-output.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';

/**
 * The relay facing an identity provider that is hostile (64 MiB documents, a key set over
 * plain http on another host) or that it is configured wrongly for (a misspelled issuer): the
 * built relay as a process, a hostile IdP fixture or a real `oidc-provider`. What a client
 * sees is the answer to a signed token; what the operator sees is the log and the metrics.
 */
const MIB = 1024 * 1024;
let relays: RunningRelay[] = [];

async function relayFor(issuer: string) {
  const port = await closedPort();
  const resource = `http://localhost:${port}`;
  const relay = await startRelay({
    env: {
      RELAY_PORT: String(port),
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(newToken()) }),
      RELAY_OAUTH_ISSUER: issuer,
      RELAY_PUBLIC_URL: resource,
      RELAY_OAUTH_JWKS_REFRESH_SECONDS: '1',
    },
  });
  relays.push(relay);
  return { relay, resource };
}

/** A token as the IdP would sign it for this relay (the test holds the IdP's private key). */
async function signed(key: JWK, issuer: string, audience: string) {
  return new SignJWT({ scope: 'mcp:agent:shop' })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
    .setIssuer(issuer)
    .setAudience(audience)
    .setSubject('robot')
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(await importJWK(key, 'ES256'));
}

async function post(resource: string, token: string) {
  const response = await fetch(`${resource}/mcp/shop/echo`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${token}`,
    },
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  });
  const body = (await response.json()) as { message?: string };
  return {
    status: response.status,
    message: body.message ?? '',
    retryAfter: response.headers.get('retry-after'),
  };
}

const configErrors = (relay: RunningRelay, output = relay.output()) =>
  logLines(output, (line) => line.msg === 'identity provider configuration error');

afterEach(async () => {
  await Promise.all(relays.map((relay) => relay.stop()));
  relays = [];
});

describe('relay OAuth against a hostile identity provider (e2e)', () => {
  let idp: HostileIdp;
  beforeAll(async () => (idp = await startHostileIdp()));
  afterAll(() => idp?.stop());

  it('stops reading a 64 MiB metadata document or key set at its cap, and counts it', async () => {
    idp.mode = { metadata: 'huge', jwks: 'normal', plainHttpJwksUri: false };
    const { relay, resource } = await relayFor(idp.issuer);
    const token = await signed(idp.key, idp.issuer, resource);
    const metadata = await waitFor(async () => {
      const answer = await post(resource, token);
      return idp.huge.length > 0 && answer;
    }, 'the huge metadata document fetched');
    expect(metadata.status).toBe(503);
    idp.mode.metadata = 'normal';
    idp.mode.jwks = 'huge';
    // The metadata is read again after the 1 s back-off; then the key set is fetched.
    await waitFor(async () => {
      await post(resource, token);
      return idp.huge.some((body) => body.path === '/jwks');
    }, 'the huge key set fetched');
    expect(new Set(idp.huge.map((body) => body.path))).toEqual(
      new Set(['/.well-known/oauth-authorization-server', '/jwks']),
    );
    // Loopback sockets buffer a few MiB; reading all 64 MiB is what must not happen.
    for (const body of idp.huge) expect(body.bytes).toBeLessThan(16 * MIB);
    expect(await metric(relay.metricsUrl, 'relay_oauth_documents_too_large_total')).toBe(
      idp.huge.length,
    );
    expect((await fetch(`${relay.healthUrl}/health`)).status).toBe(200);
  });

  it('never fetches keys from a jwks_uri over plain http on another host', async () => {
    idp.mode = { metadata: 'normal', jwks: 'normal', plainHttpJwksUri: true };
    const { relay, resource } = await relayFor(idp.issuer);
    const answer = await post(resource, await signed(idp.key, idp.issuer, resource));
    expect(answer.status).toBe(500);
    expect(answer.message).toContain('configuration error');
    expect(idp.elsewhereRequests).toBe(0);
    const [line] = await waitFor(() => {
      const lines = configErrors(relay);
      return lines.length > 0 && lines;
    }, 'the configuration error logged');
    expect(line?.reason).toContain('jwks_uri');
  });
});

describe('relay OAuth with a misspelled issuer (e2e)', () => {
  let idps: TestIdp[] = [];
  afterEach(async () => {
    await Promise.all(idps.map((idp) => idp.stop()));
    idps = [];
  });

  it.each([
    ['a trailing slash', '127.0.0.1', (issuer: string) => `${issuer}/`],
    [
      '127.0.0.1 for localhost',
      'localhost',
      (issuer: string) => issuer.replace('localhost', '127.0.0.1'),
    ],
  ])(
    'says so at start and answers clients 500, not "retry later": %s',
    async (_name, host, misspell) => {
      const idp = await startTestIdp([], { issuerHost: host });
      idps.push(idp);
      const { relay, resource } = await relayFor(misspell(idp.issuer));
      const [line] = await waitFor(() => {
        const lines = configErrors(relay);
        return lines.length > 0 && lines;
      }, 'the configuration error logged at start');
      expect(line?.reason).toContain(`names "${idp.issuer}"`);
      const answer = await post(resource, await signed(idp.keys[0]!, idp.issuer, resource));
      expect(answer).toMatchObject({ status: 500, retryAfter: null });
      expect(answer.message).toContain('configuration error');
      expect(
        await metric(relay.metricsUrl, 'relay_oauth_refusals_total{reason="idp_misconfigured"}'),
      ).toBe(1);
    },
  );

  it('starts with the IdP down, and answers 503 Retry-After until it is back', async () => {
    const issuer = `http://127.0.0.1:${await closedPort()}`;
    const { relay, resource } = await relayFor(issuer);
    const answer = await post(resource, await signed(await signingKey('k'), issuer, resource));
    expect(answer).toMatchObject({ status: 503, retryAfter: '1' });
    const output = await loggedSoFar(relay, `${resource}/mcp/shop/echo`);
    expect(configErrors(relay, output)).toEqual([]);
  });
});
