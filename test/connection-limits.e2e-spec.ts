import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { type RunningApp, startApp } from './support/app-process.js';

/**
 * The plant service's listeners hold at most MAX_CONNECTIONS_PER_ADDRESS connections from one
 * client address and MAX_CONNECTIONS in total; the rest are closed as they are accepted and
 * counted, and other addresses keep being served. (The relay server's: relay-connections.)
 */
describe('plant service: connections per address and in total', () => {
  let app: RunningApp;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    app = await startApp({ env: { MAX_CONNECTIONS_PER_ADDRESS: '10', MAX_CONNECTIONS: '25' } });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await app.stop();
  });

  const open = (count: number, localAddress: string) =>
    openIdle(sockets, app.apiUrl, count, localAddress);
  const refused = async (reason: string) =>
    (await metric(app.metricsUrl, `http_connections_refused_total{reason="${reason}"}`)) ?? 0;

  it('closes connections past either cap and serves other addresses', async () => {
    const first = await open(100, '127.0.0.2');
    await waitFor(() => first.closed() >= 90, '90 connections over the per-address cap closed');
    expect(await refused('too_many_from_address')).toBe(90);

    const others = [await open(10, '127.0.0.3'), await open(10, '127.0.0.4')];
    await waitFor(async () => (await refused('too_many')) >= 5, 'connections over the total');
    expect(await refused('too_many')).toBe(5);
    expect(first.closed() + others[0]!.closed() + others[1]!.closed()).toBe(95);

    // Once the others leave, a client is served again.
    for (const socket of sockets.splice(100)) socket.destroy();
    await waitFor(async () => {
      const answer = await fetch(`${app.apiUrl}/plants`, {
        headers: { Authorization: `Bearer ${app.token}` },
      }).catch(() => undefined);
      return answer?.status === 200;
    }, 'a request served');
  });
});

/**
 * The health and metrics ports have their own per-address cap (PROBE_MAX_CONNECTIONS_PER_ADDRESS,
 * 8) and header timeout (PROBE_HEADERS_TIMEOUT_SECONDS, 2 s), with the API port's cap off: one
 * address holding idle connections cannot fill them, and the kubelet's probes keep answering.
 */
describe('plant service: the probe ports under idle connections from one address', () => {
  let app: RunningApp;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // A small total, so that a test need not open 2,048 connections to fill it.
    app = await startApp({ env: { MAX_CONNECTIONS: '50' } });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await app.stop();
  });

  const refused = async (reason: string) =>
    (await metric(app.metricsUrl, `http_connections_refused_total{reason="${reason}"}`)) ?? 0;

  it('keeps /health and /metrics answering and closes the idle connections', async () => {
    const attack = [
      await openIdle(sockets, app.healthUrl, 60, '127.0.0.2'),
      await openIdle(sockets, app.metricsUrl, 60, '127.0.0.2'),
    ];
    // At once, not after a wait: the probe must not depend on the attacker's timeout.
    expect((await fetch(`${app.healthUrl}/health`)).status).toBe(200);
    expect((await fetch(`${app.metricsUrl}/metrics`)).status).toBe(200);
    expect(await refused('too_many_from_address')).toBe(104);

    // The 16 let in carry no request: closed after the short header timeout, and counted.
    await waitFor(
      () => attack[0]!.closed() + attack[1]!.closed() === 120,
      'idle ones closed',
      8_000,
    );
    expect(await refused('headers_timeout')).toBe(16);
  });
});

/** Opens `count` silent connections to `url` from `localAddress`; resolves once each is connected. */
async function openIdle(
  sockets: Socket[],
  url: string,
  count: number,
  localAddress: string,
): Promise<{ closed: () => number }> {
  let closed = 0;
  const port = Number(new URL(url).port);
  await Promise.all(
    Array.from({ length: count }, () => {
      const socket = connect({ port, host: '127.0.0.1', localAddress });
      sockets.push(socket);
      socket.on('error', () => undefined);
      // Reads what it is sent (a 408), so that it sees the server close the connection.
      socket.resume();
      socket.once('close', () => closed++);
      return new Promise((resolve) => {
        socket.once('connect', resolve);
        socket.once('close', resolve);
      });
    }),
  );
  return { closed: () => closed };
}
