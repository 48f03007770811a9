import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { closedPort } from './support/closed-port.js';
import { call, isErrorBody } from './support/http.js';
import { TEST_DATABASE_URL, createTestDatabase, postgresAvailable } from './support/postgres.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

describe.skipIf(!postgresAvailable)('PostgreSQL outages', () => {
  let proxy: TcpProxy;
  let app: RunningApp;

  beforeAll(async () => {
    const server = new URL(TEST_DATABASE_URL);
    proxy = new TcpProxy({ host: server.hostname, port: Number(server.port) });
    await proxy.start();
    const url = new URL(await createTestDatabase());
    url.port = String(proxy.port);
    app = await startApp({ env: { DATABASE_URL: url.toString() } });
  });
  afterAll(async () => {
    await app.stop();
    await proxy.stop();
  });

  const health = async () => {
    const started = performance.now();
    const answer = await call(`${app.healthUrl}/health`);
    return { answer, ms: performance.now() - started };
  };
  const create = (id: number) =>
    call(`${app.apiUrl}/plants`, {
      method: 'POST',
      token: app.token,
      body: `{"id": ${id}, "name": "p"}`,
    });
  const dbUp = async () =>
    (await call(`${app.metricsUrl}/metrics`)).text.match(/^db_up (\d)/m)?.[1];

  it('answers 503 Error bodies while the database is down, and recovers when it is back', async () => {
    expect((await create(1)).status).toBe(200);
    await proxy.stop();

    const down = await create(2);
    expect(down.status).toBe(503);
    expect(isErrorBody(down)).toBe(true);
    expect(down.text).not.toMatch(/ECONNREFUSED|insert|select|plants|127\.0\.0\.1/i);
    const read = await call(`${app.apiUrl}/plants/1`, { token: app.token });
    expect(read.status).toBe(503);

    const { answer, ms } = await health();
    expect(answer.status).toBe(503);
    expect(ms).toBeLessThan(1000);
    expect(
      (answer.json as { status: string; details: Record<string, { status: string }> }).status,
    ).toBe('error');
    expect(
      (answer.json as { details: Record<string, { status: string }> }).details.database?.status,
    ).toBe('down');
    expect(await dbUp()).toBe('0');
    // Liveness does not depend on the database.
    expect((await call(`${app.healthUrl}/health/live`)).status).toBe(200);

    await proxy.start();
    await expect.poll(async () => (await create(2)).status, { timeout: 10_000 }).toBe(200);
    expect((await health()).answer.status).toBe(200);
    expect(await dbUp()).toBe('1');
  });

  it('answers /health with 503 within 1 s when the database hangs', async () => {
    proxy.hang();
    const { answer, ms } = await health();
    expect(answer.status).toBe(503);
    expect(ms).toBeLessThan(1000);
    // A scrape reads the last known state: it never waits on the database.
    const started = performance.now();
    const metrics = await call(`${app.metricsUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(metrics.text).toMatch(/^db_up 0$/m);
    await proxy.stop();
    await proxy.start();
    await expect.poll(async () => (await health()).answer.status, { timeout: 10_000 }).toBe(200);
  });
});

describe.skipIf(!postgresAvailable)('a table locked past the statement timeout', () => {
  it('logs the webhook outbox reads that timed out as timeouts, by name', async () => {
    const hook = await new WebhookReceiver().listen();
    const url = await createTestDatabase();
    const app = await startApp({
      env: {
        DATABASE_URL: url,
        WEBHOOK_URLS: hook.url,
        WEBHOOK_SECRETS: hook.secret,
        WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
      },
    });
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN; LOCK TABLE webhook_outbox IN ACCESS EXCLUSIVE MODE');
      // The 10 s statement timeout, then the rate-limited warning of the outbox's reader.
      await expect
        .poll(() => app.output(), { timeout: 20_000, interval: 250 })
        .toMatch(/"reason":"[^"]*timeout[^"]*"[^\n]*plant webhook: cannot read the outbox/);
      expect(app.output()).not.toMatch(/"reason":"Error"/);
    } finally {
      await locker.end();
      await app.stop();
      await hook.close();
    }
  }, 40_000);
});

describe.skipIf(!postgresAvailable)('the plants table locked by another session', () => {
  it('fails /health within 1 s, naming the store and the lock, while writes cannot commit', async () => {
    const url = await createTestDatabase();
    const app = await startApp({ env: { DATABASE_URL: url } });
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    const health = async () => {
      const started = performance.now();
      const answer = await call(`${app.healthUrl}/health`);
      return { answer, ms: performance.now() - started };
    };
    try {
      expect((await health()).answer.status).toBe(200);
      await locker.query('BEGIN; LOCK TABLE plants IN ACCESS EXCLUSIVE MODE');
      const { answer, ms } = await health();
      expect(answer.status).toBe(503);
      expect(ms).toBeLessThan(1000);
      const details = (answer.json as { details: Record<string, { message?: string }> }).details;
      expect(details.database?.message).toMatch(/PostgreSQL.*lock/);
      await locker.query('ROLLBACK');
      expect((await health()).answer.status).toBe(200);
    } finally {
      await locker.end();
      await app.stop();
    }
  });
});

describe.skipIf(!postgresAvailable)('several replicas on one PostgreSQL', () => {
  it('start at the same time (the migration runs once, under its lock) and share the plants', async () => {
    const env = { DATABASE_URL: await createTestDatabase() };
    const replicas = await Promise.all([startApp({ env }), startApp({ env }), startApp({ env })]);
    const [a, b, c] = replicas;
    const created = await call(`${a.apiUrl}/plants`, {
      method: 'POST',
      token: a.token,
      body: '{"id": 9007199254740993, "name": "shared"}',
    });
    expect(created.status).toBe(200);
    const read = await call(`${b.apiUrl}/plants/9007199254740993`, { token: b.token });
    expect(read.text).toBe('{"id":9007199254740993,"name":"shared"}');
    const again = await call(`${c.apiUrl}/plants`, {
      method: 'POST',
      token: c.token,
      body: '{"id": 9007199254740993, "name": "again"}',
    });
    expect(again.status).toBe(409);
    const applied = replicas.flatMap((r) =>
      r
        .output()
        .split('\n')
        .filter((l) => l.includes('migration applied')),
    );
    // Each migration applied once, by one replica, however many migrations there are.
    const names = applied.map((l) => /"migration":"([^"]+)"/.exec(l)?.[1]);
    expect(names).toContain('2026-11-23-001-create-plants');
    expect(names).toHaveLength(new Set(names).size);
    await Promise.all(replicas.map((r) => r.stop()));
  });
});

describe.skipIf(!postgresAvailable)('PostgreSQL down at start', () => {
  it('retries for the bounded time, then exits non-zero naming where it tried', async () => {
    const port = await closedPort();
    const app = await startApp({
      env: {
        DATABASE_URL: `postgres://plants:hunter2hunter2@127.0.0.1:${port}/plants`,
        DATABASE_STARTUP_TIMEOUT_SECONDS: '2',
      },
      waitForHealth: false,
    });
    expect(await app.exited).toBe(1);
    expect(app.output()).toContain(
      `PostgreSQL at 127.0.0.1:${port}/plants did not answer within 2 s`,
    );
    expect(app.output()).not.toContain('hunter2');
  });
});
