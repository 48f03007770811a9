import { describe, expect, it } from 'vitest';
import { startApp } from './support/app-process.js';
import { call, isErrorBody } from './support/http.js';

// Each test starts its own service with its own budget: they run side by side.
describe.concurrent('rate limit', () => {
  it('answers 429 with Retry-After and the Error body past RATE_LIMIT_PER_MINUTE, never on health', async () => {
    const app = await startApp({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await call(`${app.apiUrl}/plants`, { token: app.token })).status);
    expect(statuses).toEqual([200, 200, 200]);

    const limited = await call(`${app.apiUrl}/plants`, { token: app.token });
    expect(limited.status).toBe(429);
    expect(isErrorBody(limited)).toBe(true);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Bad tokens are limited too (the limit runs before auth).
    expect((await call(`${app.apiUrl}/plants`, { token: 'x'.repeat(40) })).status).toBe(429);

    for (let i = 0; i < 5; i++) {
      expect((await call(`${app.healthUrl}/health`)).status).toBe(200);
      expect((await call(`${app.metricsUrl}/metrics`)).status).toBe(200);
    }
    await app.stop();
  });

  it('gives each client address one budget across every route and method, unknown paths included', async () => {
    const app = await startApp({ env: { RATE_LIMIT_PER_MINUTE: '5' } });
    const answers = [
      await call(`${app.apiUrl}/no/such/path`, { token: app.token }),
      await call(`${app.apiUrl}/plants`, { token: app.token }),
      await call(`${app.apiUrl}/plants/1`, { token: app.token }),
      await call(`${app.apiUrl}/plants`, {
        method: 'POST',
        token: app.token,
        body: '{"id": 1, "name": "x"}',
      }),
      await call(`${app.apiUrl}/plants/1`, { method: 'DELETE', token: app.token }),
    ];
    expect(answers.map((a) => a.status)).toEqual([404, 200, 404, 200, 204]);
    // The budget is spent, whichever route comes next.
    for (const path of ['/plants', '/plants/2', '/elsewhere']) {
      const limited = await call(`${app.apiUrl}${path}`, { token: app.token });
      expect(limited.status).toBe(429);
      expect(isErrorBody(limited)).toBe(true);
    }
    // A HEAD passes POST /plants's own route on its way: refused, it is labelled as unmatched.
    expect((await call(`${app.apiUrl}/PLANTS/`, { method: 'HEAD' })).status).toBe(429);
    const metrics = await (await fetch(`${app.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /^http_requests_total\{method="HEAD",route="unmatched",status="429"\} 1$/m,
    );
    await app.stop();
  });

  it('counts requests refused for their body (413, 415, 400)', async () => {
    const app = await startApp({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
    const post = (body: string, headers?: Record<string, string>) =>
      call(`${app.apiUrl}/plants`, { method: 'POST', token: app.token, body, headers });
    const refused = [
      await post(`{"id": 1, "name": "${'n'.repeat(70_000)}"}`),
      await post('{"id": 1, "name": "x"}', { 'content-type': 'text/plain' }),
      await post('{"id": 1, "name": '),
    ];
    expect(refused.map((a) => a.status)).toEqual([413, 415, 400]);
    expect((await call(`${app.apiUrl}/plants`, { token: app.token })).status).toBe(429);
    await app.stop();
  });

  it('is off by default', async () => {
    const app = await startApp();
    const answers = await Promise.all(
      Array.from({ length: 150 }, () => call(`${app.apiUrl}/plants?limit=1`, { token: app.token })),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    await app.stop();
  });
});
