import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { jwtVerify } from 'jose';
import { IdpUnavailableError, IssuerKeys } from './issuer-keys.js';

/** A tiny IdP: RFC 8414 metadata and a key set, answering 503 while `down`. */
async function idp() {
  const state = { down: false, jwksDown: false, jwks: [] as JWK[], requests: 0 };
  const server: Server = createServer((req, res) => {
    state.requests++;
    if (state.down || (state.jwksDown && req.url === '/jwks')) return res.writeHead(503).end();
    const body =
      req.url === '/jwks' ? { keys: state.jwks } : { issuer, jwks_uri: `${issuer}/jwks` };
    res.writeHead(
      req.url === '/jwks' || req.url?.includes('oauth-authorization-server') ? 200 : 404,
      {
        'Content-Type': 'application/json',
      },
    );
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { issuer, state, close: () => new Promise((r) => server.close(r)) };
}

async function key(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256' } };
}

const sign = (issuer: string, k: Awaited<ReturnType<typeof key>>) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: k.kid })
    .setIssuer(issuer)
    .setExpirationTime('5m')
    .sign(k.privateKey);

const options = (issuer: string, onFetchFailure: (error: unknown) => void) => ({
  issuer,
  jwksRefreshMs: 30_000,
  fetchTimeoutMs: 2_000,
  maxDocumentBytes: 1_048_576,
  onFetchFailure,
});

let close: (() => Promise<unknown>) | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await close?.();
});

describe('IssuerKeys', () => {
  it('keeps fetched keys working while the IdP is down, and does not hammer it', async () => {
    const server = await idp();
    close = server.close;
    const [old, fresh] = [await key('old'), await key('fresh')];
    server.state.jwks = [old.jwk];
    // Only the clock is faked: jose's cooldown and the backoff read Date.now.
    vi.useFakeTimers({ toFake: ['Date'] });
    const failures: unknown[] = [];
    const keys = new IssuerKeys(options(server.issuer, (error) => failures.push(error)));
    const verify = async (token: string) => jwtVerify(token, keys.getKey);
    await verify(await sign(server.issuer, old));
    server.state.down = true;
    vi.advanceTimersByTime(31_000);
    const freshToken = await sign(server.issuer, fresh);
    await expect(verify(freshToken)).rejects.toBeInstanceOf(IdpUnavailableError);
    expect(failures).toHaveLength(1);
    const requests = server.state.requests;
    for (let i = 0; i < 20; i++) {
      await expect(verify(freshToken)).rejects.toBeInstanceOf(IdpUnavailableError);
    }
    await verify(await sign(server.issuer, old));
    expect(server.state.requests).toBe(requests);
    vi.advanceTimersByTime(31_000);
    server.state.down = false;
    server.state.jwks = [fresh.jwk, old.jwk];
    await expect(verify(freshToken)).resolves.toBeDefined();
  });

  it('answers IdpUnavailableError when the issuer has no usable metadata', async () => {
    const server = await idp();
    close = server.close;
    server.state.down = true;
    const keys = new IssuerKeys(options(server.issuer, () => undefined));
    await expect(keys.getKey({ alg: 'ES256' }, {} as never)).rejects.toBeInstanceOf(
      IdpUnavailableError,
    );
  });

  it('reports one failed key-set fetch once, however many requests waited for it', async () => {
    const server = await idp();
    close = server.close;
    server.state.jwksDown = true;
    const failures: unknown[] = [];
    const keys = new IssuerKeys(options(server.issuer, (error) => failures.push(error)));
    const token = await sign(server.issuer, await key('k'));
    const waiting = Array.from({ length: 8 }, () => jwtVerify(token, keys.getKey));
    const outcomes = await Promise.allSettled(waiting);
    expect(outcomes.every((o) => o.status === 'rejected')).toBe(true);
    expect(failures).toHaveLength(1);
  });
});
