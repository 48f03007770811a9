import { createHash } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';
import { loggedSoFar } from './support/logged-output.js';
import { storeVariants } from './support/postgres.js';
import { withSqliteFile } from './support/sqlite-child.js';
import { waitFor, WebhookReceiver } from './support/webhook-receiver.js';

/** A chat service's incoming-webhook URL: the token is the path, a password in the userinfo. */
const TOKEN = 'xoxbSecretPathToken2026';
const secretUrl = (hook: WebhookReceiver) =>
  hook.url
    .replace('http://', 'http://bot:winter2026@')
    .replace('/plant/webhook', `/services/T0/B0/${TOKEN}`);
const unkeyedId = (url: string) => createHash('sha256').update(url).digest('hex').slice(0, 16);

describe.each(storeVariants)('webhook receiver ids on $name', (store) => {
  const apps: RunningApp[] = [];
  const hooks: WebhookReceiver[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.stop('SIGKILL')));
    await Promise.all(hooks.splice(0).map((hook) => hook.close()));
  });
  const start = async (env: Record<string, string>, dataDir?: string) => {
    const app = await startApp({ env, dataDir });
    apps.push(app);
    return app;
  };
  const setUp = async () => {
    const hook = await new WebhookReceiver().listen();
    hooks.push(hook);
    const env = {
      ...(await store.env()),
      WEBHOOK_URLS: secretUrl(hook),
      WEBHOOK_SECRETS: hook.secret,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
      WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,1,1,1,1,1,1,1,1,1',
    };
    return { hook, env };
  };
  const create = (app: RunningApp, id: number) =>
    call(`${app.apiUrl}/plants`, {
      method: 'POST',
      token: app.token,
      body: `{"id": ${id}, "name": "p"}`,
    });
  const receiversOf = async (app: RunningApp) => {
    const health = await call(`${app.healthUrl}/health`);
    const details = health.json as { details: { plantWebhook: { receivers: { id: string }[] } } };
    return { text: health.text, receivers: details.details.plantWebhook.receivers };
  };

  it('shows a receiver by id and host only, an id that is no digest of its URL', async () => {
    const { hook, env } = await setUp();
    const app = await start(env);
    expect((await create(app, 1)).status).toBe(200);
    await waitFor('the notice', () => hook.deliveries.length === 1);
    const { text, receivers } = await receiversOf(app);
    const [id] = receivers.map((r) => r.id);
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(id).not.toBe(unkeyedId(new URL(secretUrl(hook)).href));
    const metrics = (await call(`${app.metricsUrl}/metrics`)).text;
    const output = await loggedSoFar(app, `${app.apiUrl}/plants`);
    for (const seen of [text, metrics, output]) {
      expect(seen).not.toContain(TOKEN);
      expect(seen).not.toContain('/services/');
      expect(seen).not.toContain('winter2026');
    }
    // Stable: the same store gives it the same id after a restart.
    await app.stop();
    const again = await start({ ...env, API_TOKENS: app.token }, app.dataDir);
    expect((await receiversOf(again)).receivers.map((r) => r.id)).toEqual([id]);
  });

  it('delivers the notices an earlier version left pending under the unkeyed id', async () => {
    const { hook, env } = await setUp();
    let up = false;
    hook.behaviour = (_request, response) => response.writeHead(up ? 200 : 503).end();
    const app = await start(env);
    for (const id of [1, 2, 3]) expect((await create(app, id)).status).toBe(200);
    await waitFor('failed attempts', () => hook.deliveries.length >= 3);
    expect(await app.stop()).toBe(0);
    // As an earlier version wrote them: the receiver column held the bare digest of the URL.
    const unkeyed = unkeyedId(new URL(secretUrl(hook)).href);
    await rewriteReceivers(
      (env as Record<string, string | undefined>).DATABASE_URL,
      join(app.dataDir, 'plants.sqlite'),
      unkeyed,
    );

    up = true;
    const delivered = hook.deliveries.length;
    await start({ ...env, API_TOKENS: app.token }, app.dataDir);
    // Each of the three, delivered by the restarted process (none orphaned under the old id).
    await waitFor(
      'every pending notice',
      () => new Set(hook.deliveries.slice(delivered).map((d) => d.body)).size === 3,
    );
  }, 60_000);
});

/** Sets every notice's receiver to `receiver`, in PostgreSQL at `url` or else the SQLite file. */
async function rewriteReceivers(url: string | undefined, file: string, receiver: string) {
  if (url === undefined) {
    withSqliteFile(
      file,
      `db.prepare('UPDATE webhook_outbox SET receiver = ?').run('${receiver}');`,
    );
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('UPDATE webhook_outbox SET receiver = $1', [receiver]);
  } finally {
    await client.end();
  }
}
