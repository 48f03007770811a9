import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';
import { listeningPorts } from './support/listening-ports.js';
import { loggedSoFar } from './support/logged-output.js';
import {
  createTestDatabase,
  postgresAvailable,
  storeVariants,
  TEST_DATABASE_URL,
} from './support/postgres.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { waitFor, WebhookReceiver } from './support/webhook-receiver.js';
import { withSqliteFile } from './support/sqlite-child.js';
import { startOutcome } from './support/start-outcome.js';

interface ReceiverStatus {
  id: string;
  host: string;
  stopped: boolean;
  pending?: number;
}

/** The plant webhook against real receivers on loopback that verify every signature. */
describe.each(storeVariants)('plant webhook on $name', (store) => {
  const apps: RunningApp[] = [];
  const receivers: WebhookReceiver[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.stop('SIGKILL')));
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  const receiver = async () => {
    const r = await new WebhookReceiver().listen();
    receivers.push(r);
    return r;
  };
  /** The app with `to` as receivers; the environment it got is kept for a restart. */
  const envs = new Map<RunningApp, Record<string, string>>();
  const start = async (to: Pick<WebhookReceiver, 'url' | 'secret'>[], dataDir?: string) => {
    const env = {
      ...(await store.env()),
      WEBHOOK_URLS: to.map((r) => r.url).join(','),
      WEBHOOK_SECRETS: to.map((r) => r.secret).join(','),
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
      WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1',
    };
    const app = await startApp({ env, dataDir });
    apps.push(app);
    envs.set(app, env);
    return app;
  };
  const create = (app: RunningApp, id: bigint | number, name = `p${id}`) =>
    call(`${app.apiUrl}/plants`, {
      method: 'POST',
      token: app.token,
      body: `{"id": ${id}, "name": "${name}"}`,
    });
  const bodyOf = (id: bigint | number, name = `p${id}`) => `{"id":${id},"name":"${name}"}`;

  it('delivers every created plant to every receiver, signed, once per event id', async () => {
    const [a, b] = [await receiver(), await receiver()];
    const app = await start([a, b]);
    const ids = [...Array.from({ length: 40 }, (_, i) => i + 1), 9007199254740993n];
    const answers = await Promise.all(ids.map((id) => create(app, id)));
    expect(answers.map((x) => x.status)).toEqual(ids.map(() => 200));
    // A duplicate is a 409 and no notice.
    expect((await create(app, 1, 'again')).status).toBe(409);
    const expected = ids.map((id) => bodyOf(id)).sort();
    for (const r of [a, b]) {
      await waitFor('every notice', () => r.distinctBodies().length >= ids.length);
      expect(r.distinctBodies().sort()).toEqual(expected);
      expect(r.rejected).toEqual([]);
    }
    // The same event carries the same webhook-id to every receiver.
    expect(new Set(a.deliveries.map((d) => d.id))).toEqual(new Set(b.deliveries.map((d) => d.id)));
    // Visible: metrics by receiver id, /health lists each with its host; never a secret, a
    // path or a URL.
    const health = (await call(`${app.healthUrl}/health`)).json as {
      status: string;
      details: { plantWebhook: { status: string; receivers: ReceiverStatus[] } };
    };
    expect(health.status).toBe('ok');
    const listed = health.details.plantWebhook.receivers;
    expect(listed.map((r) => r.host)).toEqual([a, b].map((r) => new URL(r.url).host));
    // Receivers on one host:port are told apart.
    expect(new Set(listed.map((r) => r.id)).size).toBe(2);
    const metrics = (await call(`${app.metricsUrl}/metrics`)).text;
    for (const { id } of listed) {
      expect(metrics).toMatch(
        new RegExp(`webhook_delivery_attempts_total\\{receiver="${id}",result="2xx"\\} \\d+`),
      );
      expect(metrics).toContain(`webhook_delivery_duration_seconds_count{receiver="${id}"}`);
    }
    const output = await loggedSoFar(app, `${app.apiUrl}/plants`);
    for (const r of [a, b]) {
      expect(output).not.toContain(r.secret.slice(6));
      expect(output).not.toContain(r.url);
    }
  });

  it('gives a receiver that was down everything once it answers again (Retry-After honoured)', async () => {
    const down = await receiver();
    let up = false;
    down.behaviour = (_request, response) =>
      up ? response.writeHead(204).end() : response.writeHead(503, { 'retry-after': '1' }).end();
    const app = await start([down]);
    for (const id of [1, 2, 3]) expect((await create(app, id)).status).toBe(200);
    await waitFor('failed attempts', () => down.deliveries.length >= 3);
    up = true;
    await waitFor('redelivery', () =>
      [1, 2, 3].every((id) => down.deliveries.slice(3).some((d) => d.body === bodyOf(id))),
    );
    expect(down.distinctBodies().sort()).toEqual([1, 2, 3].map((id) => bodyOf(id)).sort());
    // Retries of one event keep its webhook-id.
    const first = down.deliveries[0]!;
    expect(
      down.deliveries.filter((d) => d.body === first.body).every((d) => d.id === first.id),
    ).toBe(true);
  });

  const stoppedHosts = async (app: RunningApp) => {
    const health = (await call(`${app.healthUrl}/health`)).json as {
      details: { plantWebhook: { receivers: ReceiverStatus[] } };
    };
    return health.details.plantWebhook.receivers.filter((r) => r.stopped).map((r) => r.host);
  };
  const untilStopped = async (app: RunningApp, host: string) => {
    const deadline = Date.now() + 20_000;
    while (!(await stoppedHosts(app)).includes(host)) {
      if (Date.now() > deadline) throw new Error('the stop never showed in /health');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it('stops sending to a receiver that answers 410, and keeps serving the others', async () => {
    const [gone, fine] = [await receiver(), await receiver()];
    gone.behaviour = (_request, response) => response.writeHead(410).end();
    const app = await start([gone, fine]);
    expect((await create(app, 1)).status).toBe(200);
    await waitFor('the 410', () => gone.deliveries.length === 1);
    // A notice made before the 410 is recorded may still go to it; none made after.
    await untilStopped(app, new URL(gone.url).host);
    for (const id of [2, 3, 4]) expect((await create(app, id)).status).toBe(200);
    await waitFor('the others', () => fine.distinctBodies().length === 4);
    expect(gone.deliveries).toHaveLength(1);
  });

  // The 410 is recorded before the kill: no lease is left to wait out.
  it('keeps a 410 receiver stopped after kill -9 and a restart; removed and added again, it starts afresh', async () => {
    const [gone, fine] = [await receiver(), await receiver()];
    let status = 410;
    gone.behaviour = (_request, response) => response.writeHead(status).end();
    const first = await start([gone, fine]);
    /** The same store (a token of its own), with `to` as receivers. */
    const restart = async (to: WebhookReceiver[]) => {
      const app = await startApp({
        env: {
          ...envs.get(first),
          WEBHOOK_URLS: to.map((r) => r.url).join(','),
          WEBHOOK_SECRETS: to.map((r) => r.secret).join(','),
          WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
        },
        dataDir: first.dataDir,
      });
      apps.push(app);
      return app;
    };
    const goneHost = new URL(gone.url).host;
    expect((await create(first, 1)).status).toBe(200);
    await waitFor('the 410', () => gone.deliveries.length === 1);
    // The precondition: the stop is recorded (it is committed before /health shows it).
    await untilStopped(first, goneHost);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');
    status = 200; // were anything sent to it now, it would count as delivered

    const second = await restart([gone, fine]);
    expect(await stoppedHosts(second)).toEqual([goneHost]);
    for (const id of [2, 3]) expect((await create(second, id)).status).toBe(200);
    await waitFor('the other receiver', () => fine.distinctBodies().length === 3);
    expect(await second.stop('SIGTERM')).toBe(0);
    // Nothing more reached the stopped receiver, before or after the restart.
    expect(gone.deliveries.map((d) => d.body)).toEqual([bodyOf(1)]);

    // The operator removes it, then adds it again: it starts afresh.
    const third = await restart([fine]);
    expect(await third.stop('SIGTERM')).toBe(0);
    const fourth = await restart([gone, fine]);
    expect(await stoppedHosts(fourth)).toEqual([]);
    expect((await create(fourth, 4)).status).toBe(200);
    await waitFor('the re-added receiver', () => gone.deliveries.length === 2);
    expect(gone.deliveries.map((d) => d.body)).toEqual([bodyOf(1), bodyOf(4)]);
    expect(gone.rejected).toEqual([]);
  }, 60_000);

  /** The value of one metric series, 0 when absent. */
  const metric = async (app: RunningApp, series: string) => {
    const text = (await call(`${app.metricsUrl}/metrics`)).text;
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.split(' ')[1]) : 0;
  };
  const receiverIds = async (app: RunningApp) =>
    (
      (await call(`${app.healthUrl}/health`)).json as {
        details: { plantWebhook: { receivers: ReceiverStatus[] } };
      }
    ).details.plantWebhook.receivers.map((r) => r.id);

  it('leaves nothing pending when a 410 is recorded amid commits; the backlog gauges, by receiver, return to 0', async () => {
    const fine = await Promise.all([1, 2, 3, 4].map(() => receiver()));
    const gone = await receiver();
    gone.behaviour = (_request, response) => response.writeHead(410).end();
    const app = await start([gone, ...fine]);
    const ids = Array.from({ length: 20 }, (_, i) => i + 1);
    const answers = await Promise.all(ids.map((id) => create(app, id)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    for (const r of fine) await waitFor('every notice', () => r.distinctBodies().length === 20);
    const series = (await receiverIds(app)).map(
      (id) => `webhook_pending_notices{receiver="${id}"}`,
    );
    expect(series).toHaveLength(5);
    // Before: one unlabelled gauge, and rows committed while the stop was recorded stayed
    // pending until a restart, so it never came back to 0.
    const deadline = Date.now() + 30_000;
    for (const name of series) {
      while (
        (await metric(app, name)) !== 0 ||
        !(await call(`${app.metricsUrl}/metrics`)).text.includes(name)
      ) {
        if (Date.now() > deadline) throw new Error(`${name} never came back to 0`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await app.stop('SIGTERM');
    expect(await outboxStates(app)).not.toContain('pending');
  }, 60_000);

  it('sends retries on time: a receiver refusing connections, then back, gets every notice within a few seconds', async () => {
    const first = await new WebhookReceiver().listen();
    const target = { url: first.url, secret: first.secret };
    await first.close(); // its port refuses connections from now on
    const app = await start([target]);
    const ids = Array.from({ length: 25 }, (_, i) => i + 1);
    expect(
      (await Promise.all(ids.map((id) => create(app, id)))).every((a) => a.status === 200),
    ).toBe(true);
    // Each notice refused for about ten 1 s retries: longer than a lease was (10 s).
    const retried = () => app.output().split('attempt failed; retrying').length - 1;
    await waitFor('the retries', () => retried() >= 10 * ids.length, 60_000);
    const back = new WebhookReceiver(first.secret);
    receivers.push(back);
    await back.listen(Number(new URL(target.url).port));
    const since = Date.now();
    await waitFor('every notice', () => back.distinctBodies().length === ids.length, 30_000);
    // A 1 s schedule and a 2 s poll; before, one notice in a few came a whole lease (10 s) late.
    expect(Date.now() - since).toBeLessThan(5_000);
  }, 90_000);

  it('a receiver that hangs slows neither POST /plants nor the other receivers', async () => {
    const [hung, fine] = [await receiver(), await receiver()];
    hung.behaviour = () => undefined; // never answers (the 15 s timeout is far off)
    const app = await start([hung, fine]);
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => create(app, i + 1)));
    expect(answers.every((x) => x.status === 200)).toBe(true);
    await waitFor('the hung receiver holding requests', () => hung.deliveries.length > 0);
    await waitFor('the other receiver', () => fine.distinctBodies().length === 30, 10_000);
    // Far below the 15 s a receiver may hang: nothing waited on it.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('stops promptly on SIGTERM while an attempt hangs; the notice goes out after the restart', async () => {
    const hook = await receiver();
    let hang = true;
    hook.behaviour = (_request, response) => {
      if (!hang) response.writeHead(200).end();
    };
    const app = await start([hook]);
    expect((await create(app, 1)).status).toBe(200);
    await waitFor('the attempt in flight', () => hook.deliveries.length === 1);
    const stopping = Date.now();
    expect(await app.stop('SIGTERM')).toBe(0);
    // Far below the 15 s the attempt could still wait: the dispatcher aborted it.
    expect(Date.now() - stopping).toBeLessThan(10_000);
    // Its lease handed back (PostgreSQL), not left to run out.
    expect(await outboxStates(app, 'leased_by')).toEqual([null]);
    hang = false;
    const again = await startApp({
      env: { ...envs.get(app), API_TOKENS: app.token },
      dataDir: app.dataDir,
    });
    apps.push(again);
    // The stopping process handed its notice back: no lease to wait out.
    await waitFor('the redelivery', () => hook.deliveries.length >= 2, 15_000);
    expect(hook.deliveries[1]!.id).toBe(hook.deliveries[0]!.id);
  }, 90_000);

  /** Each notice's state (or who leases it) in the stopped app's store, by plant id. */
  const outboxStates = async (
    app: RunningApp,
    column: 'state' | 'leased_by' = 'state',
  ): Promise<(string | null)[]> => {
    const query = `SELECT ${column} AS state FROM webhook_outbox ORDER BY id`;
    const url = envs.get(app)?.DATABASE_URL;
    if (url === undefined) {
      return withSqliteFile<(string | null)[]>(
        join(app.dataDir, 'plants.sqlite'),
        `return db.prepare(${JSON.stringify(query)}).all().map((row) => row.state);`,
      );
    }
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      return (await db.query<{ state: string | null }>(query)).rows.map((row) => row.state);
    } finally {
      await db.end();
    }
  };

  it('sends a notice again after a kill -9 that came before its delivered mark was written', async () => {
    const hook = await receiver();
    const app = await start([hook]);
    // Killed once the receiver has the notice, before its 200 leaves: no delivered mark can
    // have been written, and the notice goes out again, with the same webhook-id.
    hook.behaviour = (_request, response) => {
      app.child.kill('SIGKILL');
      response.writeHead(200).end();
    };
    expect((await create(app, 1)).status).toBe(200);
    expect(await app.exited).toBe('SIGKILL');
    expect(hook.deliveries).toHaveLength(1); // the precondition: delivered before the kill
    hook.behaviour = (_request, response) => response.writeHead(200).end();
    const again = await startApp({
      env: { ...envs.get(app), API_TOKENS: app.token },
      dataDir: app.dataDir,
    });
    apps.push(again);
    // On PostgreSQL the dead process's lease runs out first (25 s from its claim), then a
    // poll; the rest is room for a loaded CI.
    await waitFor('the notice sent again', () => hook.deliveries.length >= 2, 45_000);
    expect(hook.deliveries[1]!.id).toBe(hook.deliveries[0]!.id);
    expect(hook.distinctBodies()).toEqual([bodyOf(1)]);
  }, 90_000);

  it('writes the delivered marks it holds when stopped cleanly, so a restart sends nothing again', async () => {
    const hook = await receiver();
    const app = await start([hook]);
    const ids = Array.from({ length: 30 }, (_, i) => i + 1);
    const answers = await Promise.all(ids.map((id) => create(app, id)));
    expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200));
    await waitFor('every notice', () => hook.distinctBodies().length === ids.length);
    expect(await app.stop('SIGTERM')).toBe(0);
    expect(await outboxStates(app)).toEqual(ids.map(() => 'delivered'));
  }, 60_000);

  it('loses no notice to kill -9 under load: every acknowledged plant is delivered after the restart, and only committed ones', async () => {
    const late = await receiver();
    let up = false;
    late.behaviour = (_request, response) => response.writeHead(up ? 200 : 503).end();
    const first = await start([late]);
    const ids = Array.from({ length: 300 }, (_, i) => i + 1);
    const acknowledged: number[] = [];
    // Killed at the 20th acknowledgement, not at a poll that may come after the last one: more
    // than one group commit (128) holds the 300, so the later ones are still in flight.
    const inFlight = ids.map((id) =>
      create(first, id).then(
        (answer) => {
          if (answer.status === 200) acknowledged.push(id);
          if (acknowledged.length === 20) first.child.kill('SIGKILL');
        },
        () => undefined, // cut by the kill: maybe committed, maybe not
      ),
    );
    expect(await first.exited).toBe('SIGKILL');
    await Promise.all(inFlight);
    const acked = [...acknowledged];
    expect(acked.length).toBeLessThan(ids.length); // the precondition: killed under load
    up = true;
    const second = await startApp({
      env: { ...envs.get(first), API_TOKENS: first.token },
      dataDir: first.dataDir,
    });
    apps.push(second);
    const delivered = () => new Set(late.distinctBodies().map((b) => /"id":(\d+)/.exec(b)![1]));
    // On PostgreSQL the notices the dead process had claimed wait for its 25 s lease to run
    // out (other replicas may be alive); the embedded store releases them at start.
    await waitFor(
      'every acknowledged plant',
      () => acked.every((id) => delivered().has(String(id))),
      store.name === 'postgres' ? 60_000 : 20_000,
    );
    // Notices only for committed plants: each delivered id is in the store.
    for (const id of delivered()) {
      const stored = await call(`${second.apiUrl}/plants/${id}`, { token: first.token });
      expect(stored.status, `plant ${id}`).toBe(200);
    }
    expect(late.rejected).toEqual([]);
  }, 120_000);
});

describe.skipIf(!postgresAvailable)('plant webhook with two replicas on one PostgreSQL', () => {
  it('delivers each notice once in the normal case', async () => {
    const hook = await new WebhookReceiver().listen();
    const url = await createTestDatabase();
    const token = newToken();
    const env = {
      DATABASE_URL: url,
      API_TOKENS: token,
      WEBHOOK_URLS: hook.url,
      WEBHOOK_SECRETS: hook.secret,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
    };
    const replicas = [await startApp({ env }), await startApp({ env })];
    try {
      const ids = Array.from({ length: 100 }, (_, i) => i + 1);
      const answers = await Promise.all(
        ids.map((id) =>
          call(`${replicas[id % 2]!.apiUrl}/plants`, {
            method: 'POST',
            token,
            body: `{"id": ${id}, "name": "p${id}"}`,
          }),
        ),
      );
      expect(answers.every((a) => a.status === 200)).toBe(true);
      await waitFor('every notice', () => hook.distinctBodies().length === ids.length);
      // Once every outbox row is delivered no replica has anything left to send: a duplicate
      // would have arrived by then.
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      try {
        const undelivered = async () =>
          Number(
            (
              await db.query<{ n: string }>(
                "SELECT count(*) AS n FROM webhook_outbox WHERE state <> 'delivered'",
              )
            ).rows[0]!.n,
          );
        const deadline = Date.now() + 20_000;
        while ((await undelivered()) > 0 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(await undelivered()).toBe(0);
      } finally {
        await db.end();
      }
      expect(hook.deliveries).toHaveLength(ids.length);
      expect(hook.rejected).toEqual([]);
    } finally {
      await Promise.all(replicas.map((app) => app.stop('SIGKILL')));
      await hook.close();
    }
  });
});

describe.skipIf(!postgresAvailable)('plant webhook replicas on one PostgreSQL', () => {
  /** Bytes a second of queries `proxy`'s client sends over `ms` and while `during` runs. */
  const sendRate = async (proxy: TcpProxy, ms: number, during: () => Promise<void>) => {
    const [before, started] = [proxy.bytesFromClients, Date.now()];
    const window = new Promise((resolve) => setTimeout(resolve, ms));
    await Promise.all([during(), window]);
    return Math.round(((proxy.bytesFromClients - before) * 1000) / (Date.now() - started));
  };

  it('does not wake a replica to claim when no row is due for it', async () => {
    const hooks = await Promise.all(
      Array.from({ length: 8 }, () => new WebhookReceiver().listen()),
    );
    const server = new URL(TEST_DATABASE_URL);
    const proxy = new TcpProxy({ host: server.hostname, port: Number(server.port) });
    await proxy.start();
    const url = await createTestDatabase();
    const proxied = Object.assign(new URL(url), { port: String(proxy.port) }).toString();
    const token = newToken();
    const env = {
      API_TOKENS: token,
      WEBHOOK_URLS: hooks.map((h) => h.url).join(','),
      WEBHOOK_SECRETS: hooks.map((h) => h.secret).join(','),
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
    };
    const writer = await startApp({ env: { ...env, DATABASE_URL: url } });
    // Receivers of its own: no row is ever due for the idle replica, only the writer's are.
    const ownUrls = hooks.map((h) => `${h.url}?idle`).join(',');
    const idle = await startApp({
      env: { ...env, WEBHOOK_URLS: ownUrls, DATABASE_URL: proxied },
    });
    try {
      const quiet = await sendRate(proxy, 4_000, () => Promise.resolve());
      let id = 0;
      const load = async () => {
        for (let round = 0; round < 40; round++) {
          const answers = await Promise.all(
            Array.from({ length: 5 }, () =>
              call(`${writer.apiUrl}/plants`, {
                method: 'POST',
                token,
                body: `{"id": ${++id}, "name": "p"}`,
              }),
            ),
          );
          expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
        }
      };
      const busy = await sendRate(proxy, 4_000, load);
      await waitFor('every notice', () => hooks.every((h) => h.distinctBodies().length === id));
      // Woken by each of the writer's commits, the idle replica claimed for its 8 receivers:
      // ~45 KB/s here against ~4 KB/s for its poll and upkeep, with ~1.5-3 KB/s quiet.
      expect(busy).toBeLessThan(3 * quiet + 4_000);
    } finally {
      await Promise.all([writer.stop('SIGKILL'), idle.stop('SIGKILL')]);
      await proxy.stop();
      await Promise.all(hooks.map((h) => h.close()));
    }
  }, 90_000);
});

describe.skipIf(!postgresAvailable)('the webhook worker as its own process', () => {
  const apps: RunningApp[] = [];
  const hooks: WebhookReceiver[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.stop('SIGKILL')));
    await Promise.all(hooks.splice(0).map((hook) => hook.close()));
  });
  const setUp = async () => {
    const hook = await new WebhookReceiver().listen();
    hooks.push(hook);
    const env = {
      DATABASE_URL: await createTestDatabase(),
      API_TOKENS: newToken(),
      WEBHOOK_URLS: hook.url,
      WEBHOOK_SECRETS: hook.secret,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
    };
    const run = async (options: Parameters<typeof startApp>[0]) => {
      const app = await startApp(options);
      apps.push(app);
      return app;
    };
    const api = await run({ env: { ...env, WEBHOOK_DELIVERY: 'external' } });
    const worker = () => run({ env, webhookWorker: true });
    const create = (id: number) =>
      call(`${api.apiUrl}/plants`, {
        method: 'POST',
        token: env.API_TOKENS,
        body: `{"id": ${id}, "name": "p${id}"}`,
      });
    return { hook, env, api, worker, create };
  };

  it('delivers what an API with delivery off wrote, each notice once across two workers', async () => {
    const { hook, api, worker, create } = await setUp();
    const workers = [await worker(), await worker()];
    const ids = Array.from({ length: 60 }, (_, i) => i + 1);
    expect((await Promise.all(ids.map(create))).every((a) => a.status === 200)).toBe(true);
    await waitFor('every notice', () => hook.distinctBodies().length === ids.length);
    // The API sent nothing itself; the workers' probes answer.
    expect((await call(`${api.metricsUrl}/metrics`)).text).not.toMatch(
      /webhook_delivery_attempts_total\{/,
    );
    const deliveryOf = async (app: RunningApp) =>
      (
        (await call(`${app.healthUrl}/health`)).json as {
          details: { plantWebhook: { delivery: string } };
        }
      ).details.plantWebhook.delivery;
    expect(await deliveryOf(api)).toBe('external');
    for (const w of workers) {
      const health = await call(`${w.healthUrl}/health`);
      expect(health.status).toBe(200);
      expect(await deliveryOf(w)).toBe('worker');
      expect((await call(`${w.metricsUrl}/metrics`)).status).toBe(200);
    }
    const stopped = await Promise.all(workers.map((w) => w.stop('SIGTERM')));
    expect(stopped).toEqual([0, 0]);
    expect(hook.deliveries).toHaveLength(ids.length);
    expect(hook.rejected).toEqual([]);
  }, 60_000);

  it('listens on its health and metrics ports only, and says it is the worker', async () => {
    const { worker } = await setUp();
    const w = await worker();
    const portOf = (url: string) => Number(new URL(url).port);
    expect(listeningPorts(w.child.pid!)).toEqual(
      [portOf(w.healthUrl), portOf(w.metricsUrl)].sort((a, b) => a - b),
    );
    const health = (await call(`${w.healthUrl}/health`)).json as {
      details: { plantWebhook: { delivery: string } };
    };
    expect(health.details.plantWebhook.delivery).toBe('worker');
    // Each port serves its own paths only.
    expect((await call(`${w.healthUrl}/metrics`)).status).toBe(404);
    expect((await call(`${w.metricsUrl}/health`)).status).toBe(404);
    expect((await call(`${w.healthUrl}/health/live`)).status).toBe(200);
    expect((await call(`${w.healthUrl}/health/ready`)).status).toBe(200);
  }, 60_000);

  it('started on the probe ports of the API, exits 1 naming the setting to change', async () => {
    const { env, api } = await setUp();
    const taken = Number(new URL(api.healthUrl).port);
    const w = await startApp({
      env: {
        ...env,
        SERVICE_HEALTH_CHECK_PORT: String(taken),
        SERVICE_METRICS_PORT: new URL(api.metricsUrl).port,
      },
      webhookWorker: true,
      waitForHealth: false,
    });
    apps.push(w);
    expect(await startOutcome(w)).toBe(1);
    expect(w.output()).toContain(`SERVICE_HEALTH_CHECK_PORT=${taken} on 127.0.0.1`);
    expect(w.output()).toContain('EADDRINUSE');
  }, 60_000);

  it('takes over the notice of a worker killed mid-attempt once its lease runs out', async () => {
    const { hook, worker, create } = await setUp();
    let hang = true;
    hook.behaviour = (_request, response) => {
      if (!hang) response.writeHead(200).end();
    };
    const first = await worker();
    expect((await create(1)).status).toBe(200);
    await waitFor('the attempt in flight', () => hook.deliveries.length === 1);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');
    hang = false;
    await worker();
    // The 25 s lease from the claim, then a 2 s poll; the rest is room for a loaded machine.
    await waitFor('the takeover', () => hook.deliveries.length >= 2, 45_000);
    expect(hook.deliveries[1]!.id).toBe(hook.deliveries[0]!.id);
  }, 90_000);
});

describe('the webhook worker on the embedded store', () => {
  it('is refused in a plain sentence, as is WEBHOOK_DELIVERY=external', async () => {
    for (const options of [
      { webhookWorker: true },
      { env: { WEBHOOK_DELIVERY: 'external', DATABASE_URL: '' } },
    ]) {
      const app = await startApp({ ...options, waitForHealth: false });
      expect(await app.exited).toBe(78);
      expect(app.output()).toMatch(/needs PostgreSQL \(DATABASE_URL\)/);
    }
  });
});
