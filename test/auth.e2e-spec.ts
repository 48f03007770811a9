import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, newToken, startApp } from './support/app-process.js';
import { call, isErrorBody } from './support/http.js';
import { loggedSoFar } from './support/logged-output.js';

describe('bearer auth', () => {
  let app: RunningApp;
  const digestToken = newToken();
  const plainToken = randomBytes(24).toString('hex'); // 48 characters
  beforeAll(async () => {
    const digest = createHash('sha256').update(digestToken).digest('hex');
    app = await startApp({ env: { API_TOKENS: `sha256:${digest}, ${plainToken}` } });
  });
  afterAll(async () => {
    await app.stop();
  });

  it.each([
    ['POST', '/plants', '{"id": 1, "name": "x"}'],
    ['GET', '/plants', undefined],
    ['GET', '/plants/1', undefined],
    ['DELETE', '/plants/1', undefined],
  ])(
    'refuses %s %s without a token: 401, Error body, WWW-Authenticate: Bearer',
    async (method, path, body) => {
      const answer = await call(`${app.apiUrl}${path}`, { method, body });
      expect(answer.status).toBe(401);
      expect(isErrorBody(answer)).toBe(true);
      expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect(answer.headers.get('www-authenticate')).not.toContain('error=');
    },
  );

  it.each([
    ['a wrong token', 'Bearer wrong-token-wrong-token-wrong-token'],
    ['a token with a different case', `Bearer ${plainToken.toUpperCase()}`],
    ['a prefix of a valid token', `Bearer ${plainToken.slice(0, 40)}`],
  ])('refuses %s with error="invalid_token"', async (_case, authorization) => {
    const answer = await call(`${app.apiUrl}/plants`, { headers: { authorization } });
    expect(answer.status).toBe(401);
    expect(isErrorBody(answer)).toBe(true);
    expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/);
  });

  it.each(['Basic dXNlcjpwYXNz', 'Bearer', 'bearer', 'Token abc', ''])(
    'refuses the header %j with a bare Bearer challenge',
    async (authorization) => {
      const answer = await call(`${app.apiUrl}/plants`, { headers: { authorization } });
      expect(answer.status).toBe(401);
      expect(isErrorBody(answer)).toBe(true);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="plant-store"');
    },
  );

  it('refuses a valid token in the query string (?access_token=): header only', async () => {
    const answer = await call(`${app.apiUrl}/plants/424242?access_token=${plainToken}`);
    expect(answer.status).toBe(401);
    expect(isErrorBody(answer)).toBe(true);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="plant-store"');
    // The same request with the header passes auth (404: no such plant).
    expect((await call(`${app.apiUrl}/plants/424242`, { token: plainToken })).status).toBe(404);
  });

  it('refuses a valid token in the JSON body (access_token): header only', async () => {
    const answer = await call(`${app.apiUrl}/plants`, {
      method: 'POST',
      body: JSON.stringify({ id: 90, name: 'x', access_token: plainToken }),
    });
    expect(answer.status).toBe(401);
    expect(isErrorBody(answer)).toBe(true);
    expect((await call(`${app.apiUrl}/plants/90`, { token: plainToken })).status).toBe(404);
  });

  it('accepts a token given as its sha256 digest and a plain token', async () => {
    expect((await call(`${app.apiUrl}/plants`, { token: digestToken })).status).toBe(200);
    expect((await call(`${app.apiUrl}/plants`, { token: plainToken })).status).toBe(200);
  });

  it('serves the OpenAPI documents and Swagger UI without a token', async () => {
    for (const path of ['/openapi.json', '/openapi.yaml', '/docs/']) {
      expect((await call(`${app.apiUrl}${path}`)).status).toBe(200);
    }
  });

  it('never writes a token to its output', async () => {
    await call(`${app.apiUrl}/plants`, { token: plainToken });
    await call(`${app.apiUrl}/plants`, {
      headers: { authorization: 'Bearer leaked-guess-leaked-guess' },
    });
    const output = await loggedSoFar(app, `${app.apiUrl}/plants`);
    expect(output).not.toContain(plainToken);
    expect(output).not.toContain(digestToken);
    expect(output).not.toContain('leaked-guess');
  });
});

// Each test starts its own service: they run side by side.
describe.concurrent('development token', () => {
  it('is made when API_TOKENS is empty, printed once, kept in DATA_DIR and works after a restart', async ({
    expect,
  }) => {
    const first = await startApp({ env: { API_TOKENS: '' } });
    const file = join(first.dataDir, 'dev-token');
    const token = readFileSync(file, 'utf8').trim();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await call(`${first.apiUrl}/plants`, { token })).status).toBe(200);
    expect(await first.stop()).toBe(0);
    // The banner follows the queued log lines (it may come after /health answers): count it
    // once the process has exited and its output is complete.
    expect(first.output().split(token).length - 1).toBe(1);

    const second = await startApp({ env: { API_TOKENS: '' }, dataDir: first.dataDir });
    await expect.poll(() => second.output(), { timeout: 10_000 }).toContain(token);
    expect((await call(`${second.apiUrl}/plants`, { token })).status).toBe(200);
    expect((await call(`${second.apiUrl}/plants`, { token: 'x'.repeat(40) })).status).toBe(401);
    await second.stop();
  });

  it('is refused in production: no tokens means no start, with a clear message', async () => {
    const app = await startApp({
      env: { API_TOKENS: '', NODE_ENV: 'production' },
      waitForHealth: false,
    });
    expect(await app.exited).toBe(78);
    expect(app.output()).toContain('API_TOKENS is required when NODE_ENV=production');
  });
});
