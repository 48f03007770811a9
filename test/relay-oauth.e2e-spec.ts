import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { decodeJwt, importJWK, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { echoServer, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { shopAgentEnv, untilShopServersUp } from './fixtures/relay-e2e-support.js';
import {
  signingKey,
  startTestIdp,
  type TestIdp,
  type TestIdpClient,
} from './fixtures/relay-server/oauth-idp.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { closedPort } from './support/closed-port.js';
import { loggedSoFar } from './support/logged-output.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';

/**
 * The relay as an OAuth 2.1 resource server, end to end: a real authorization server
 * (oidc-provider, client credentials, resource indicators, JWT access tokens), the built relay
 * over TLS, the built service as agent `shop` with its echo MCP server, and the official SDK
 * client finding everything from a 401. Static client tokens work beside it.
 */
const shopToken = newToken();
const aliceToken = newToken();
const secret = () => newToken() + newToken();
const robot: TestIdpClient = {
  id: 'robot',
  secret: secret(),
  scope: 'mcp:agent:shop mcp:agent:lab',
};
const robot2: TestIdpClient = { id: 'robot2', secret: secret(), scope: 'mcp:agent:shop' };
const labbot: TestIdpClient = { id: 'labbot', secret: secret(), scope: 'mcp:agent:lab' };

let ca: TestCa;
let tlsFetch: typeof fetch;
let idp: TestIdp;
let relay: RunningRelay;
let app: RunningApp;
let resource: string;
const issued: string[] = [];
/** An attacker's key set, which tokens name in `jku` or `x5u`; the relay must never fetch it. */
let attacker: { key: JWK; publicKey: JWK; keySetUrl: string; requests: number; stop(): void };

const mcpUrl = (agent = 'shop', server = 'echo') => `${resource}/mcp/${agent}/${server}`;
/** The relay over TLS with the test CA; the IdP on plain loopback HTTP. */
const anyFetch: typeof fetch = (input, init) =>
  String(input instanceof Request ? input.url : input).startsWith('https:')
    ? tlsFetch(input, init)
    : fetch(input, init);

async function token(client: TestIdpClient, options: { resource?: string; scope?: string } = {}) {
  const value = await idp.token(client, {
    resource: options.resource ?? resource,
    scope: options.scope ?? client.scope,
  });
  issued.push(value);
  return value;
}

/**
 * A token the IdP never issued, signed with `key` (its `kid` unless the header names another),
 * with these claims and header over good ones; a claim set to undefined is left out.
 */
async function forged(
  key: JWK,
  claims: Record<string, unknown> = {},
  header: { alg?: string; typ?: string; kid?: string; jwk?: JWK; jku?: string; x5u?: string } = {},
) {
  const now = Math.floor(Date.now() / 1000);
  const good = { iss: idp.issuer, aud: resource, sub: 'robot', iat: now - 5, exp: now + 300 };
  const payload = Object.fromEntries(
    Object.entries({ scope: 'mcp:agent:shop', client_id: 'robot', ...good, ...claims }).filter(
      ([, value]) => value !== undefined,
    ),
  );
  const { alg = 'ES256', typ = 'at+jwt', ...more } = header;
  const signer = new SignJWT(payload).setProtectedHeader({ alg, typ, kid: key.kid, ...more });
  const value = await signer.sign(
    alg === 'HS256' ? new TextEncoder().encode('x'.repeat(32)) : await importJWK(key, alg),
  );
  issued.push(value);
  return value;
}

const initialize = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 't', version: '1' },
  },
};

async function post(bearer: string, url = mcpUrl(), body: unknown = initialize, session?: string) {
  const response = await tlsFetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${bearer}`,
      ...(session !== undefined && { 'Mcp-Session-Id': session }),
    },
    body: JSON.stringify(body),
  });
  await response.text();
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate') ?? '',
    retryAfter: response.headers.get('retry-after'),
    session: response.headers.get('mcp-session-id'),
  };
}

/** Serves the attacker's public key under the IdP's key id and its own, counting requests. */
async function startAttacker(idpKid: string): Promise<typeof attacker> {
  const key = await signingKey('attacker');
  const publicKey: JWK = { ...key };
  delete publicKey.d;
  const keySet = JSON.stringify({ keys: [{ ...publicKey, kid: idpKid }, publicKey] });
  const server = createServer((_req, res) => {
    attacker.requests++;
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(keySet);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const keySetUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  return { key, publicKey, keySetUrl, requests: 0, stop: () => server.close() };
}

/** A token carrying or naming the attacker's key, signed with it, under `kid`. */
const embedding = (kind: 'jwk' | 'jku' | 'x5u', kid: 'idp' | 'fresh') => () =>
  forged(
    attacker.key,
    {},
    {
      kid: kid === 'idp' ? idp.keys.at(-1)!.kid : attacker.key.kid,
      ...(kind === 'jwk' ? { jwk: attacker.publicKey } : { [kind]: attacker.keySetUrl }),
    },
  );

beforeAll(async () => {
  ca = createTestCa();
  tlsFetch = fetchTrusting(readFileSync(ca.caFile, 'utf8'));
  idp = await startTestIdp([robot, robot2, labbot]);
  attacker = await startAttacker(idp.keys.at(-1)!.kid!);
  // The audience names the public URL, so the port is chosen before the relay starts.
  const port = await closedPort();
  resource = `https://localhost:${port}`;
  relay = await startRelay({
    env: {
      RELAY_PORT: String(port),
      RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
      RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(shopToken), lab: sha256Entry(newToken()) }),
      RELAY_CLIENTS: JSON.stringify({
        alice: { tokens: sha256Entry(aliceToken), agents: ['shop'] },
      }),
      RELAY_OAUTH_ISSUER: idp.issuer,
      RELAY_PUBLIC_URL: resource,
      RELAY_OAUTH_JWKS_REFRESH_SECONDS: '1',
    },
  });
  app = await startApp({
    env: shopAgentEnv(relay, ca.caFile, shopToken),
    mcpServers: { mcpServers: { echo: echoServer() } },
  });
  await untilShopServersUp(relay, ['echo']);
  await waitFor(
    async () => (await post(aliceToken)).status === 200,
    'agent shop with its echo server reachable through the relay',
    30_000,
  );
}, 60_000);

afterAll(async () => {
  await app?.stop();
  await relay?.stop();
  await idp?.stop().catch(() => undefined);
  attacker?.stop();
});

describe('relay server as an OAuth resource server (e2e)', () => {
  it('serves its protected resource metadata (RFC 9728), plain and path-suffixed', async () => {
    const plain = await tlsFetch(`${resource}/.well-known/oauth-protected-resource`);
    expect(plain.status).toBe(200);
    expect(await plain.json()).toEqual({
      resource,
      authorization_servers: [idp.issuer],
      bearer_methods_supported: ['header'],
      resource_name: 'Plant Store relay',
    });
    const suffixed = await tlsFetch(
      `${resource}/.well-known/oauth-protected-resource/mcp/shop/echo`,
    );
    expect(await suffixed.json()).toMatchObject({ resource, scopes_supported: ['mcp:agent:shop'] });
  });

  it('the official SDK client finds the IdP from the 401, gets a token and calls a tool', async () => {
    const provider = new ClientCredentialsProvider({
      clientId: robot.id,
      clientSecret: robot.secret,
      expectedIssuer: idp.issuer,
    });
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl()), {
      authProvider: provider,
      fetch: anyFetch,
    });
    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'with OAuth' } });
      expect(result.content).toEqual([{ type: 'text', text: 'with OAuth' }]);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    const accessToken = provider.tokens()?.access_token ?? '';
    issued.push(accessToken);
    expect(decodeJwt(accessToken)).toMatchObject({ aud: resource, scope: 'mcp:agent:shop' });
  });

  it('answers 401 with the resource metadata and the scope when there is no token', async () => {
    const response = await tlsFetch(mcpUrl(), { method: 'POST', body: '{}' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer realm="plant-store-relay", resource_metadata="${resource}/.well-known/oauth-protected-resource", scope="mcp:agent:shop"`,
    );
  });

  it('leaves a path segment that cannot be an agent name out of the challenge', async () => {
    const response = await tlsFetch(`${resource}/mcp/a%22b/echo`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer realm="plant-store-relay", resource_metadata="${resource}/.well-known/oauth-protected-resource"`,
    );
  });

  it.each([
    [
      'another audience',
      () => token(robot, { resource: 'https://elsewhere.example' }),
      'not for this resource',
    ],
    [
      'an expired token',
      () => forged(idp.keys.at(-1)!, { exp: Math.floor(Date.now() / 1000) - 120 }),
      'has expired',
    ],
    [
      'an unknown signing key',
      async () => forged(await signingKey('stranger')),
      'not signed by a key',
    ],
    ['alg none', () => Promise.resolve(unsigned()), 'not accepted'],
    [
      'alg HS256 under the IdP key id',
      () => forged(idp.keys.at(-1)!, {}, { alg: 'HS256' }),
      'not accepted',
    ],
    [
      'an ID-token-shaped JWT (typ JWT)',
      () => forged(idp.keys.at(-1)!, {}, { typ: 'JWT' }),
      'not an access token',
    ],
    [
      'a token issued in the year 9000',
      () => forged(idp.keys.at(-1)!, { iat: Date.UTC(9000, 0, 1) / 1000 }),
      'not accepted',
    ],
    ['a token without sub', () => forged(idp.keys.at(-1)!, { sub: undefined }), 'not accepted'],
    ['an opaque token', () => Promise.resolve(newToken()), 'not accepted'],
    // The key is the issuer's key set's to name: a key a token carries or points at is ignored.
    ['its own key in jwk, under the IdP key id', embedding('jwk', 'idp'), 'not accepted'],
    ['its own key in jwk, under a new key id', embedding('jwk', 'fresh'), 'not signed by a key'],
    ['a jku key set, under the IdP key id', embedding('jku', 'idp'), 'not accepted'],
    ['a jku key set, under a new key id', embedding('jku', 'fresh'), 'not signed by a key'],
    ['an x5u key set, under the IdP key id', embedding('x5u', 'idp'), 'not accepted'],
    ['an x5u key set, under a new key id', embedding('x5u', 'fresh'), 'not signed by a key'],
  ])('refuses %s with 401 invalid_token', async (_name, make, description) => {
    const answer = await post(await make());
    expect(answer.status).toBe(401);
    expect(answer.challenge).toContain(
      `resource_metadata="${resource}/.well-known/oauth-protected-resource"`,
    );
    expect(answer.challenge).toContain('error="invalid_token"');
    expect(answer.challenge).toContain(description);
    expect(attacker.requests).toBe(0);
  });

  it('answers 403 insufficient_scope, the same for an agent that does not exist', async () => {
    const labOnly = await token(labbot);
    for (const agent of ['shop', 'ghost']) {
      const answer = await post(labOnly, mcpUrl(agent));
      expect(answer.status).toBe(403);
      expect(answer.challenge).toContain('error="insufficient_scope"');
      expect(answer.challenge).toContain(`scope="mcp:agent:${agent}"`);
    }
    expect(
      await metric(relay.metricsUrl, 'relay_oauth_refusals_total{reason="insufficient_scope"}'),
    ).toBeGreaterThanOrEqual(2);
  });

  it('keeps a session to the subject that opened it; static tokens work beside OAuth', async () => {
    const opened = await post(await token(robot));
    expect(opened.status).toBe(200);
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    expect((await post(await token(robot2), mcpUrl(), list, opened.session!)).status).toBe(404);
    expect((await post(await token(robot), mcpUrl(), list, opened.session!)).status).toBe(200);
    expect((await post(aliceToken)).status).toBe(200);
  });

  it("never gives a token without sub another subject's session by its client_id", async () => {
    const opened = await post(await token(robot));
    expect(opened.status).toBe(200);
    const { sub } = decodeJwt(issued.at(-1)!);
    const clientNamedLikeIt = await forged(idp.keys.at(-1)!, { sub: undefined, client_id: sub });
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    const answer = await post(clientNamedLikeIt, mcpUrl(), list, opened.session!);
    expect(answer.status).toBe(401);
  });

  it('fetches the key set once per refresh interval in a storm of unknown key ids', async () => {
    // A relay of its own: with the 30 s default the bound is one fetch, whatever the storm's pace.
    const refreshSeconds = 30;
    const port = await closedPort();
    const stormResource = `https://localhost:${port}`;
    const stormRelay = await startRelay({
      env: {
        RELAY_PORT: String(port),
        RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
        RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
        RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(newToken()) }),
        RELAY_OAUTH_ISSUER: idp.issuer,
        RELAY_PUBLIC_URL: stormResource,
        RELAY_OAUTH_JWKS_REFRESH_SECONDS: String(refreshSeconds),
      },
    });
    try {
      const stranger = await signingKey('stranger');
      const tokens = await Promise.all(
        Array.from({ length: 300 }, () =>
          forged(stranger, { aud: stormResource }, { kid: randomUUID() }),
        ),
      );
      const before = idp.jwksRequests;
      const started = performance.now();
      const outcomes = new Set<string>();
      for (let i = 0; i < tokens.length; i += 30) {
        const batch = tokens.slice(i, i + 30);
        for (const answer of await Promise.all(
          batch.map((t) => post(t, `${stormResource}/mcp/shop/echo`)),
        )) {
          outcomes.add(
            `${answer.status} ${/error_description="([^"]*)"/.exec(answer.challenge)?.[1]}`,
          );
        }
      }
      const elapsedMs = performance.now() - started;
      expect([...outcomes]).toEqual(['401 the token is not signed by a key of the issuer']);
      // RELAY_OAUTH_JWKS_REFRESH_SECONDS is the least time between two fetches.
      const bound = 1 + Math.floor(elapsedMs / (refreshSeconds * 1000));
      // The first unknown key does fetch: a counter that never moved would meet any bound.
      expect(idp.jwksRequests - before).toBeGreaterThanOrEqual(1);
      expect(idp.jwksRequests - before).toBeLessThanOrEqual(bound);
    } finally {
      await stormRelay.stop();
    }
  }, 60_000);

  it('takes tokens signed with a rotated key without a restart', async () => {
    const before = await token(robot);
    await idp.rotateKey();
    const after = await token(robot);
    expect(decodeJwt(after)).not.toEqual(decodeJwt(before));
    await waitFor(async () => (await post(after)).status === 200, 'the new key accepted');
    expect((await post(before)).status).toBe(200);
  });

  it('with the IdP stopped: cached keys still verify, a new key id gets 503 Retry-After', async () => {
    const cached = await token(robot);
    await idp.stop();
    expect((await post(cached)).status).toBe(200);
    const newKid = await forged(await signingKey('after-the-outage'));
    const refused = await waitFor(async () => {
      const answer = await post(newKid);
      return answer.status === 503 && answer;
    }, 'a 503 for a key the relay cannot fetch');
    expect(refused.retryAfter).toBe('1');
    expect((await post(cached)).status).toBe(200);
    expect(
      await metric(relay.metricsUrl, 'relay_oauth_jwks_fetch_failures_total'),
    ).toBeGreaterThanOrEqual(1);
    expect((await fetch(`${relay.healthUrl}/health`)).status).toBe(200);
  });

  it('never writes a token into its log', async () => {
    const output = await loggedSoFar(relay, mcpUrl(), tlsFetch);
    expect(issued.length).toBeGreaterThan(5);
    for (const value of [...issued, aliceToken]) expect(output).not.toContain(value);
  });
});

/** `alg: none`: a token with no signature at all. */
function unsigned(): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return `${part({ alg: 'none', typ: 'at+jwt' })}.${part({
    iss: idp.issuer,
    aud: resource,
    sub: 'robot',
    scope: 'mcp:agent:shop',
    exp: now + 300,
  })}.`;
}
