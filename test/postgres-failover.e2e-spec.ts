import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';
import {
  PostgresCluster,
  type PostgresServer,
  clusterToolsAvailable,
} from './support/postgres-cluster.js';
import { PostLoad } from './support/post-load.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { WebhookReceiver, waitFor } from './support/webhook-receiver.js';

const LOOPS = 8;
/** How long the proxy reaches a server still in recovery before the promoted one. */
const READ_ONLY_WINDOW_MS = 3_000;
/** CloudNativePG's own target for the primary endpoint switch. */
const RECOVERY_MS = 10_000;

const at = (server: PostgresServer) => ({ host: '127.0.0.1', port: server.port });

/**
 * A stand-in for a CloudNativePG cluster with synchronous replication, one cluster for both
 * tests: a switchover (the primary shut down cleanly, the synchronous standby promoted, the old
 * primary rejoining as its standby), then a failover (that primary killed, the `-rw` Service
 * pointing for a while at a server still in recovery, then at the promoted standby). Eight
 * clients POST all along, through a TCP proxy standing in for the Service.
 */
describe.skipIf(!clusterToolsAvailable)('PostgreSQL switchover and failover under load', () => {
  let cluster: PostgresCluster;
  let proxy: TcpProxy;
  /** What each test started: stopped at its end, or after all when it fails. */
  const stops: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };

  beforeAll(async () => {
    cluster = await PostgresCluster.start();
    proxy = new TcpProxy(at(cluster.primary));
    await proxy.start();
  });
  afterAll(async () => {
    await stopAll();
    await proxy?.stop();
    await cluster?.stop();
  });

  /** A receiver and the env of processes that reach the cluster through the proxy. */
  const setUp = async () => {
    const receiver = await new WebhookReceiver().listen();
    stops.push(() => receiver.close());
    const url = new URL(cluster.primary.url);
    url.port = String(proxy.port);
    const env = {
      DATABASE_URL: url.toString(),
      WEBHOOK_URLS: receiver.url,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
      WEBHOOK_SECRETS: receiver.secret,
      WEBHOOK_RETRY_SCHEDULE_SECONDS: Array(20).fill('1').join(','),
    };
    return { receiver, env };
  };
  const started = async (options: Parameters<typeof startApp>[0]) => {
    const app = await startApp(options);
    stops.push(() => app.stop());
    return app;
  };
  const healthOf = async (app: RunningApp, path = '/health') =>
    (await call(`${app.healthUrl}${path}`)).status;

  it('switchover: loses nothing, answers only 200 or 503, and writes again within 10 s', async () => {
    const { receiver, env } = await setUp();
    const app = await started({ env }); // delivering its webhooks itself
    const load = new PostLoad(app, LOOPS, RECOVERY_MS + 2_000, 1e6);
    await load.untilAcknowledged(200);

    const [demoted, promoted] = [cluster.primary, cluster.sync];
    await demoted.shutDown();
    // The address still reaches the stopped server: the store shows down.
    const healthInGap = await healthOf(app);
    await promoted.promote();
    proxy.moveTo(at(promoted), { cut: true });
    load.switched();
    await load.finished();

    await expectNothingLost(load, promoted, receiver);
    expect(healthInGap).toBe(503);
    expect(await healthOf(app)).toBe(200);
    report('switchover', load);
    await stopAll();
    await cluster.rejoinDemoted();
  }, 120_000);

  it('failover: the API and the webhook worker recover by themselves, nothing lost', async () => {
    const { receiver, env } = await setUp();
    const app = await started({ env: { ...env, WEBHOOK_DELIVERY: 'external' } });
    const worker = await started({ env, webhookWorker: true });
    const load = new PostLoad(app, LOOPS, RECOVERY_MS + 2_000, 1e8);
    await load.untilAcknowledged(200);
    const promoted = cluster.sync;

    cluster.primary.kill();
    proxy.moveTo(at(cluster.lagging), { cut: true });
    const movedAt = Date.now();
    let healthInWindow = 0;
    const answersSince = (t: number) => load.answers.filter((a) => a.startedAt > t).length;
    while (Date.now() < movedAt + READ_ONLY_WINDOW_MS || answersSince(movedAt) < 2 * LOOPS) {
      healthInWindow = await healthOf(app);
    }
    await promoted.promote();
    proxy.moveTo(at(promoted), { cut: false });
    load.switched();
    await load.finished();

    await expectNothingLost(load, promoted, receiver);
    // At the end of the window only a server in recovery was reachable: the store showed down.
    expect(healthInWindow).toBe(503);
    expect(await healthOf(app)).toBe(200);
    // The worker was never restarted: it LISTENs on the new primary and is ready.
    expect(worker.child.exitCode).toBeNull();
    const listening = `select count(*)::int as n from pg_stat_activity where query = 'LISTEN webhook_outbox'`;
    await expect
      .poll(async () => (await promoted.query<{ n: number }>(listening))[0]?.n, {
        timeout: 10_000,
      })
      .toBe(1);
    expect(await healthOf(worker, '/health/ready')).toBe(200);
    // No connection of the API's or the worker's pool stays on the server that never became
    // the primary.
    const onLagging = `select count(*)::int as n from pg_stat_activity where application_name = 'plant-store'`;
    await expect
      .poll(async () => (await cluster.lagging.query<{ n: number }>(onLagging))[0]?.n, {
        timeout: 20_000,
      })
      .toBe(0);
    expect((await call(`${app.metricsUrl}/metrics`)).text).toMatch(
      /^# TYPE db_pool_acquire_failures_total counter$/m,
    );
    report('failover', load);
    await stopAll();
  }, 120_000);
});

/**
 * What a primary change may never cost: an acknowledged plant missing from the new primary or
 * its notice, a 500, a 503 without Retry-After, a loop still failing 10 s after the switch.
 */
async function expectNothingLost(
  load: PostLoad,
  primary: PostgresServer,
  receiver: WebhookReceiver,
): Promise<void> {
  const statuses = load.statuses();
  expect(Object.keys(statuses).sort(), JSON.stringify(statuses)).toEqual(['200', '503']);
  expect(load.answers.filter((a) => a.status === 503 && a.retryAfter === null)).toEqual([]);
  for (const late of load.answersAfter(RECOVERY_MS)) {
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter((a) => a.status !== 200)).toEqual([]);
  }

  const acknowledged = load.acknowledged();
  const [stored] = await primary.query<{ n: number }>(
    'select count(*)::int as n from plants where id = any($1::bigint[])',
    [acknowledged.map(String)],
  );
  expect(stored?.n).toBe(acknowledged.length);

  const notified = () =>
    new Set(receiver.distinctBodies().map((b) => (JSON.parse(b) as { id: number }).id));
  await waitFor(
    'a notice of every acknowledged plant',
    () => {
      const seen = notified();
      return acknowledged.every((id) => seen.has(id));
    },
    // A notice claimed when the connection was cut comes back when its lease (25 s) ends.
    60_000,
  );
  load.notifiedAt = Date.now();
}

function report(what: string, load: PostLoad): void {
  console.info(
    `${what}: ${load.acknowledged().length} acknowledged, 0 lost, ` +
      `statuses ${JSON.stringify(load.statuses())}, every loop's first 200 within ` +
      `${load.firstOkAfterSwitch()} ms of the switch, ` +
      `every notice ${load.notifiedAt - load.endedAt} ms after the load ended`,
  );
}
