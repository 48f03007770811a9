import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { call, isErrorBody } from './support/http.js';

describe('health, metrics and port separation', () => {
  let app: RunningApp;
  beforeAll(async () => {
    app = await startApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  it('GET /health answers 200 with the Terminus body, without a token', async () => {
    for (const path of ['/health', '/health/ready']) {
      const answer = await call(`${app.healthUrl}${path}`);
      expect(answer.status).toBe(200);
      const body = answer.json as Record<string, Record<string, { status: string }>>;
      expect(body.status).toBe('ok');
      expect(Object.keys(body).sort()).toEqual(['details', 'error', 'info', 'status']);
      expect(body.details?.database?.status).toBe('up');
      expect(body.details?.config?.status).toBe('up');
    }
    const live = await call(`${app.healthUrl}/health/live`);
    expect(live.status).toBe(200);
    expect((live.json as { status: string }).status).toBe('ok');
  });

  it('each port serves only its own paths', async () => {
    const wrong = [
      `${app.healthUrl}/plants`,
      `${app.healthUrl}/metrics`,
      `${app.healthUrl}/docs/`,
      `${app.metricsUrl}/health`,
      `${app.metricsUrl}/plants`,
      `${app.metricsUrl}/openapi.json`,
      `${app.apiUrl}/metrics`,
      `${app.apiUrl}/health`,
      `${app.apiUrl}/health/live`,
      // Express routes case-insensitively: the port check must too.
      `${app.apiUrl}/METRICS`,
      `${app.apiUrl}/Health`,
      `${app.healthUrl}/PLANTS`,
    ];
    for (const url of wrong) {
      const answer = await call(url, { token: app.token });
      expect(answer.status, url).toBe(404);
      expect(isErrorBody(answer), url).toBe(true);
    }
  });

  it('GET /metrics serves the Prometheus text format with route templates, never ids or tokens', async () => {
    const id = '9007199254740993';
    await call(`${app.apiUrl}/plants`, {
      method: 'POST',
      token: app.token,
      body: `{"id": ${id}, "name": "m"}`,
    });
    await call(`${app.apiUrl}/plants/${id}`, { token: app.token });
    await call(`${app.apiUrl}/plants/${id}`, { token: 'not-the-token-not-the-token-not' });
    await call(`${app.apiUrl}/plants`, { method: 'POST', token: app.token, body: '{"id": 1}' });

    const answer = await call(`${app.metricsUrl}/metrics`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = answer.text;
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'http_request_duration_seconds_bucket',
      'mcp_server_up',
      'mcp_server_restarts_total',
      'mcp_server_tools',
      'agent_server_connected',
    ]) {
      expect(text, name).toContain(name);
    }
    expect(text).toMatch(/^http_requests_total\{method="POST",route="\/plants",status="200"\} 1$/m);
    expect(text).toMatch(/^http_requests_total\{method="POST",route="\/plants",status="400"\} 1$/m);
    expect(text).toMatch(
      /^http_requests_total\{method="GET",route="\/plants\/:id",status="200"\} 1$/m,
    );
    expect(text).toMatch(
      /^http_requests_total\{method="GET",route="\/plants\/:id",status="401"\} 1$/m,
    );
    expect(text).toMatch(/^plants_created_total 1$/m);
    expect(text).toMatch(/^auth_failures_total 1$/m);
    expect(text).toMatch(/^db_up 1$/m);
    expect(text).toMatch(/^agent_server_connected 0$/m);
    expect(text).not.toContain(id);
    expect(text).not.toContain(app.token);
    // Health probes and scrapes are not API traffic.
    expect(text).not.toMatch(/route="\/health|route="\/metrics/);
  });

  it('labels POST /plants refused for its body (400, 413, 415) with the route, not "unmatched"', async () => {
    const post = (body: string, contentType = 'application/json') =>
      call(`${app.apiUrl}/plants`, {
        method: 'POST',
        token: app.token,
        body,
        headers: { 'content-type': contentType },
      });
    expect((await post('{"id": 7, "name": ')).status).toBe(400);
    expect((await post(`{"tag": "${'x'.repeat(70_000)}"}`)).status).toBe(413);
    expect((await post('{"id": 7, "name": "x"}', 'text/plain')).status).toBe(415);

    const text = (await call(`${app.metricsUrl}/metrics`)).text;
    expect(text).toMatch(/^http_requests_total\{method="POST",route="\/plants",status="413"\} 1$/m);
    expect(text).toMatch(/^http_requests_total\{method="POST",route="\/plants",status="415"\} 1$/m);
    expect(text).not.toContain('method="POST",route="unmatched"');
    const logged = (status: number) =>
      app
        .output()
        .split('\n')
        .filter((l) => l.includes('"method":"POST"') && l.includes(`"status":${status}`))
        .map((l) => (JSON.parse(l) as { route: string }).route);
    await expect.poll(() => logged(415)).toEqual(['/plants']);
    expect(logged(413)).toEqual(['/plants']);
    expect(logged(400)).not.toContain('unmatched');
  });

  it('logs one line per API request with method, route template, status and duration', async () => {
    await call(`${app.apiUrl}/plants/12345`, { token: app.token });
    await expect
      .poll(
        () =>
          app
            .output()
            .split('\n')
            .filter((l) => l.includes('"route":"/plants/:id"') && l.includes('"status":404'))
            .length,
      )
      .toBeGreaterThan(0);
    const line = app
      .output()
      .split('\n')
      .find((l) => l.includes('"status":404') && l.includes('"route":"/plants/:id"'))!;
    const entry = JSON.parse(line) as Record<string, unknown>;
    expect(entry).toMatchObject({ method: 'GET', route: '/plants/:id', status: 404 });
    expect(typeof entry.durationMs).toBe('number');
    expect(line).not.toContain('12345');
  });
});

describe('log level', () => {
  it('SERVICE_LOG_LEVEL=warn drops per-request info lines', async () => {
    const app = await startApp({ env: { SERVICE_LOG_LEVEL: 'warn' } });
    expect((await call(`${app.apiUrl}/plants`, { token: app.token })).status).toBe(200);
    // The moment has passed once the process has exited cleanly (its shutdown flushes the
    // logger) and its pipes are closed: every line it would have written is in the output.
    const closed = new Promise((resolve) => app.child.once('close', resolve));
    expect(await app.stop()).toBe(0);
    await closed;
    expect(app.output()).not.toContain('"route":"/plants"');
  });

  it('SERVICE_REQUEST_LOG=false drops the request lines, not the metrics or other lines', async () => {
    const app = await startApp({ env: { SERVICE_REQUEST_LOG: 'false' } });
    expect((await call(`${app.apiUrl}/plants`, { token: app.token })).status).toBe(200);
    const post = { method: 'POST', token: app.token, body: '{"id": 7, "name": "Fern"}' };
    expect((await call(`${app.apiUrl}/plants`, post)).status).toBe(200);
    const metrics = await (await fetch(`${app.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /^http_requests_total\{method="POST",route="\/plants",status="200"\} 1$/m,
    );
    const closed = new Promise((resolve) => app.child.once('close', resolve));
    expect(await app.stop()).toBe(0);
    await closed;
    expect(app.output()).toContain('"msg":"Plant Store listening"');
    expect(app.output()).not.toContain('"route":"/plants"');
  });
});

describe('start-up output', () => {
  const startUp = async (level: string) => {
    // No API_TOKENS outside production: the development token and its banner.
    const app = await startApp({ env: { API_TOKENS: undefined, SERVICE_LOG_LEVEL: level } });
    await expect
      .poll(() => app.output())
      .toMatch(/Development token \(kept in .*\):\n {4}dev_\S+\n/);
    return app;
  };

  it('at info is the "listening" line, then the banner last', async () => {
    const app = await startUp('info');
    try {
      const output = app.output();
      const messages = output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => (JSON.parse(line) as { msg: string }).msg)
        // A new store's schema changes are worth an operator's attention, once.
        .filter((msg) => msg !== 'migration applied');
      expect(messages).toEqual(['Plant Store listening']);
      expect(output.indexOf('Plant Store listening')).toBeLessThan(
        output.indexOf('Plant Store API'),
      );
      expect(output.trimEnd()).toMatch(/\n {4}dev_\S+$/);
    } finally {
      await app.stop();
    }
  });

  it('with API_TOKENS set keeps the banner, without any token', async () => {
    const app = await startApp();
    try {
      await expect.poll(() => app.output()).toContain('Tokens           the ones API_TOKENS lists');
      expect(app.output()).toContain(`Plant Store API  ${app.apiUrl.replace(/\/$/, '')}`);
      expect(app.output()).not.toContain(app.token);
    } finally {
      await app.stop();
    }
  });

  it("at debug still has Nest's route mapping", async () => {
    const app = await startUp('debug');
    try {
      expect(app.output()).toContain('"msg":"Mapped {/plants, POST} route"');
    } finally {
      await app.stop();
    }
  });
});
