import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { newToken, ROOT, type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';
import { createTestDatabase, postgresAvailable } from './support/postgres.js';
import { waitFor, WebhookReceiver } from './support/webhook-receiver.js';

const CLOCK_AHEAD = `--import=${join(ROOT, 'test/fixtures/clock-ahead.mjs')}`;

/** An API whose clock runs 600 s ahead of its webhook worker's, on one PostgreSQL. */
describe.skipIf(!postgresAvailable)('webhooks across clocks that disagree', () => {
  const apps: RunningApp[] = [];
  let hook: WebhookReceiver | undefined;
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.stop('SIGKILL')));
    await hook?.close();
  });
  const setUp = async () => {
    hook = await new WebhookReceiver().listen();
    const env = {
      DATABASE_URL: await createTestDatabase(),
      API_TOKENS: newToken(),
      WEBHOOK_URLS: hook.url,
      WEBHOOK_SECRETS: hook.secret,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
      WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1',
    };
    const api = await startApp({
      env: { ...env, WEBHOOK_DELIVERY: 'external', NODE_OPTIONS: CLOCK_AHEAD },
    });
    const worker = await startApp({ env, webhookWorker: true });
    apps.push(api, worker);
    const create = (id: number) =>
      call(`${api.apiUrl}/plants`, {
        method: 'POST',
        token: env.API_TOKENS,
        body: `{"id": ${id}, "name": "p${id}"}`,
      });
    return { hook, worker, create };
  };

  it('delivers at once what the API wrote (due times are the database clock)', async () => {
    const { hook, create } = await setUp();
    const ids = Array.from({ length: 20 }, (_, i) => i + 1);
    expect((await Promise.all(ids.map(create))).every((a) => a.status === 200)).toBe(true);
    await waitFor('every notice', () => hook.distinctBodies().length === ids.length, 15_000);
  });

  it('shows the age of a stuck backlog, not 0', async () => {
    const { hook, worker, create } = await setUp();
    hook.behaviour = (_request, response) => response.writeHead(503).end();
    expect((await create(1)).status).toBe(200);
    await waitFor('a failed attempt', () => hook.deliveries.length >= 1);
    // The backlog is read every 5 s; by then the notice is seconds old, by any clock.
    await expect
      .poll(
        async () => {
          const metrics = (await call(`${worker.metricsUrl}/metrics`)).text;
          return Number(/^webhook_oldest_pending_age_seconds\{[^}]*\} (\S+)$/m.exec(metrics)?.[1]);
        },
        { timeout: 15_000, interval: 250 },
      )
      .toBeGreaterThan(0);
  }, 40_000);
});
