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

  /** Opens `count` silent connections from `localAddress`; resolves once each is connected. */
  async function open(count: number, localAddress: string): Promise<{ closed: () => number }> {
    let closed = 0;
    const port = Number(new URL(app.apiUrl).port);
    await Promise.all(
      Array.from({ length: count }, () => {
        const socket = connect({ port, host: '127.0.0.1', localAddress });
        sockets.push(socket);
        socket.on('error', () => undefined);
        socket.once('close', () => closed++);
        return new Promise((resolve) => {
          socket.once('connect', resolve);
          socket.once('close', resolve);
        });
      }),
    );
    return { closed: () => closed };
  }

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
