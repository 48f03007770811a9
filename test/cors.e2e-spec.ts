import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';

const DOCS = 'https://docs.example.com';

/** A browser's preflight for a GET with a bearer token from `origin`. */
const preflight = (app: RunningApp, origin: string) =>
  call(`${app.apiUrl}/plants`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'GET',
      'access-control-request-headers': 'authorization',
    },
  });

/** Enough plants for a next page, so that a Link header is there to expose. */
async function seed(app: RunningApp): Promise<void> {
  for (const id of [1, 2, 3]) {
    const created = await call(`${app.apiUrl}/plants`, {
      method: 'POST',
      token: app.token,
      body: `{"id": ${id}, "name": "p${id}"}`,
    });
    expect(created.status).toBe(200);
  }
}

describe('CORS', () => {
  // One service per configuration, started side by side; the tests only read.
  describe.concurrent('off by default', () => {
    let app: RunningApp;
    beforeAll(async () => {
      app = await startApp();
      await seed(app);
    });
    afterAll(async () => {
      await app.stop();
    });

    it('sends no CORS header, on a preflight or a request from another origin', async () => {
      // No CORS layer: the preflight (which carries no token) meets the auth guard like any request.
      const answer = await preflight(app, DOCS);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('access-control-allow-origin')).toBeNull();
      const listed = await call(`${app.apiUrl}/plants?limit=1`, {
        token: app.token,
        headers: { origin: DOCS },
      });
      expect(listed.status).toBe(200);
      expect(listed.headers.get('link')).not.toBeNull();
      expect(listed.headers.get('access-control-allow-origin')).toBeNull();
      expect(listed.headers.get('access-control-expose-headers')).toBeNull();
    });
  });

  describe.concurrent('CORS_ORIGINS set to a list', () => {
    let app: RunningApp;
    beforeAll(async () => {
      app = await startApp({ env: { CORS_ORIGINS: `${DOCS}, http://localhost:5173` } });
      await seed(app);
    });
    afterAll(async () => {
      await app.stop();
    });

    it('answers the preflight of a listed origin, allowing the Authorization header', async () => {
      const answer = await preflight(app, DOCS);
      expect(answer.status).toBe(204);
      expect(answer.headers.get('access-control-allow-origin')).toBe(DOCS);
      expect(answer.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
      expect(answer.headers.get('access-control-allow-methods')).toMatch(/GET/);
      expect(answer.headers.get('access-control-allow-credentials')).toBeNull();
    });

    it('exposes Link to a listed origin, so a browser can follow rel="next"', async () => {
      const listed = await call(`${app.apiUrl}/plants?limit=1`, {
        token: app.token,
        headers: { origin: DOCS },
      });
      expect(listed.status).toBe(200);
      expect(listed.headers.get('link')).toMatch(/rel="next"/);
      expect(listed.headers.get('access-control-allow-origin')).toBe(DOCS);
      expect(listed.headers.get('access-control-expose-headers')?.split(',')).toContain('Link');
      expect(listed.headers.get('vary')).toMatch(/Origin/);
    });

    it('gives an origin that is not listed no CORS header', async () => {
      const answer = await preflight(app, 'https://evil.example');
      expect(answer.headers.get('access-control-allow-origin')).toBeNull();
      const listed = await call(`${app.apiUrl}/plants?limit=1`, {
        token: app.token,
        headers: { origin: 'https://evil.example' },
      });
      expect(listed.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('still asks a cross-origin request for its token', async () => {
      const answer = await call(`${app.apiUrl}/plants`, { headers: { origin: DOCS } });
      expect(answer.status).toBe(401);
      expect(answer.headers.get('access-control-allow-origin')).toBe(DOCS);
    });
  });

  describe.concurrent('CORS_ORIGINS=*', () => {
    let app: RunningApp;
    beforeAll(async () => {
      app = await startApp({ env: { CORS_ORIGINS: '*' } });
    });
    afterAll(async () => {
      await app.stop();
    });

    it('allows any origin, without credentials', async () => {
      const answer = await preflight(app, 'https://anywhere.example');
      expect(answer.status).toBe(204);
      expect(answer.headers.get('access-control-allow-origin')).toBe('*');
      expect(answer.headers.get('access-control-allow-credentials')).toBeNull();
    });

    it('answers no CORS header on the health and metrics ports', async () => {
      const origin = { origin: 'https://anywhere.example' };
      for (const url of [
        `${app.healthUrl}/health`,
        `${app.healthUrl}/health/ready`,
        `${app.metricsUrl}/metrics`,
      ]) {
        const answer = await call(url, { headers: origin });
        expect(answer.status, url).toBe(200);
        expect(answer.headers.get('access-control-allow-origin'), url).toBeNull();
        expect(answer.headers.get('access-control-expose-headers'), url).toBeNull();
        const preflight = await call(url, {
          method: 'OPTIONS',
          headers: { ...origin, 'access-control-request-method': 'GET' },
        });
        expect(preflight.headers.get('access-control-allow-origin'), url).toBeNull();
      }
      // The API port still answers them.
      const api = await call(`${app.apiUrl}/plants`, { headers: origin });
      expect(api.headers.get('access-control-allow-origin')).toBe('*');
    });
  });
});
