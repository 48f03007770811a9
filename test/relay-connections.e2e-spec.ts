import type { IncomingMessage } from 'node:http';
import { Agent, request } from 'node:https';
import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { newToken } from './support/app-process.js';
import { rssMiB } from './support/process-memory.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';

/**
 * Connections into the built relay server that never send a request: a TLS handshake that never
 * finishes is closed after RELAY_TLS_HANDSHAKE_TIMEOUT_SECONDS, and every listener (the TLS one
 * and the plain probe ports) holds at most RELAY_MAX_CONNECTIONS_PER_ADDRESS connections from
 * one source address and RELAY_MAX_CONNECTIONS in total, closing the rest as they come. Other
 * addresses keep being served meanwhile. The relay runs with a small heap, and its resident
 * memory is bounded while the attack is far past the caps.
 */
const agentToken = newToken();
const clientToken = newToken();
const HEAP_MIB = 128;
/** Well below the chart's 512Mi; the relay idles near 100 MiB. */
const RSS_BOUND_MIB = 256;

let ca: TestCa;
let relay: RunningRelay | undefined;
const sockets: Socket[] = [];

beforeAll(() => {
  ca = createTestCa();
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await relay?.stop();
  relay = undefined;
});

function start(env: Record<string, string>): Promise<RunningRelay> {
  return startRelay({
    nodeArgs: [`--max-old-space-size=${HEAP_MIB}`],
    env: {
      RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
      RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(agentToken) }),
      RELAY_CLIENTS: JSON.stringify({
        alice: { tokens: sha256Entry(clientToken), agents: ['shop'] },
      }),
      ...env,
    },
  });
}

/** Raw TCP connections that say nothing, or half a TLS ClientHello, and count their closes. */
class SilentPeers {
  open = 0;
  closed = 0;

  constructor(
    private readonly port: number,
    private readonly localAddress = '127.0.0.1',
  ) {}

  async add(count: number, halfHello = false): Promise<void> {
    const connected: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const socket = connect({
        port: this.port,
        host: '127.0.0.1',
        localAddress: this.localAddress,
      });
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => {
        this.open--;
        this.closed++;
      });
      this.open++;
      connected.push(
        new Promise((resolve) => {
          socket.once('connect', () => {
            // A TLS record header announcing a ClientHello, and one byte of it.
            if (halfHello) socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
            resolve();
          });
          socket.once('close', () => resolve());
        }),
      );
    }
    await Promise.all(connected);
  }
}

/** A well-behaved MCP client's initialize on the aggregate endpoint, from `localAddress`. */
async function initialize(port: number, localAddress: string): Promise<number> {
  return (await initializeResponse(port, localAddress)).statusCode ?? 0;
}

function initializeResponse(
  port: number,
  localAddress: string,
  agent: Agent | false = false,
): Promise<IncomingMessage> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'well-behaved', version: '1' },
    },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        localAddress,
        servername: 'localhost',
        ca: readFileSync(ca.caFile, 'utf8'),
        path: '/mcp/shop',
        method: 'POST',
        agent,
        headers: {
          Authorization: `Bearer ${clientToken}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
      },
      (res) => {
        res.resume();
        resolve(res);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const refused = async (reason: string) =>
  (await metric(relay!.metricsUrl, `relay_connections_refused_total{reason="${reason}"}`)) ?? 0;

describe('relay server: connections that carry no request', () => {
  it('closes TLS connections that never finish the handshake, and serves others meanwhile', async () => {
    relay = await start({ RELAY_TLS_HANDSHAKE_TIMEOUT_SECONDS: '2' });
    const peers = new SilentPeers(relay.port);
    await peers.add(20);
    await peers.add(20, true);
    expect(await initialize(relay.port, '127.0.0.2')).toBe(200);
    await waitFor(() => peers.open === 0, 'every silent TLS connection closed', 30_000);
    expect(peers.closed).toBe(40);
    expect(await refused('tls_handshake_timeout')).toBe(40);
  });

  it('takes TLS handshakes in turns past RELAY_TLS_MAX_HANDSHAKES_PER_SECOND', async () => {
    relay = await start({
      RELAY_TLS_MAX_HANDSHAKES_PER_SECOND: '1',
      RELAY_TLS_HANDSHAKE_WAIT_SECONDS: '30',
      RELAY_TLS_HANDSHAKE_TIMEOUT_SECONDS: '30',
    });
    // Three connections ahead of it take the turns of seconds 0, 1 and 2.
    await new SilentPeers(relay.port).add(3);
    const started = performance.now();
    expect(await initialize(relay.port, '127.0.0.2')).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2_500);
    expect(await refused('tls_handshake_wait')).toBe(0);
  });

  it('closes a connection that waits for its handshake past RELAY_TLS_HANDSHAKE_WAIT_SECONDS', async () => {
    relay = await start({
      RELAY_TLS_MAX_HANDSHAKES_PER_SECOND: '1',
      RELAY_TLS_HANDSHAKE_WAIT_SECONDS: '1',
      RELAY_TLS_HANDSHAKE_TIMEOUT_SECONDS: '120',
    });
    // The first starts at once and stays; the second may get the next turn; the others cannot.
    const peers = new SilentPeers(relay.port);
    await peers.add(5);
    await waitFor(() => peers.closed >= 3, 'three waiting connections closed');
    await waitFor(() => peers.open <= 2 && peers.open + peers.closed === 5, 'the rest settled');
    expect(await refused('tls_handshake_wait')).toBe(peers.closed);
    expect(await initialize(relay.port, '127.0.0.2')).toBe(200);
  });

  it('caps connections per source address and in total on every listener', async () => {
    relay = await start({
      // Long enough that the held connections stay for the whole test.
      RELAY_TLS_HANDSHAKE_TIMEOUT_SECONDS: '120',
      RELAY_MAX_CONNECTIONS_PER_ADDRESS: '50',
      RELAY_MAX_CONNECTIONS: '120',
    });
    const before = rssMiB(relay.child.pid)!;

    // One address, 40 times its cap: 50 held, the rest closed as they come.
    const attacker = new SilentPeers(relay.port);
    for (let batch = 0; batch < 10; batch++) await attacker.add(200, batch % 2 === 1);
    await waitFor(() => attacker.closed >= 1950, '1,950 connections over the cap closed');
    expect(attacker.open).toBe(50);
    expect(await refused('too_many_from_address')).toBe(1950);
    expect(await initialize(relay.port, '127.0.0.9')).toBe(200);
    const during = rssMiB(relay.child.pid)!;
    expect(during, `relay RSS ${before} → ${during} MiB`).toBeLessThan(RSS_BOUND_MIB);

    // More addresses, up to the total: 120 held in all, then closed whatever their address.
    const others = [
      new SilentPeers(relay.port, '127.0.0.2'),
      new SilentPeers(relay.port, '127.0.0.3'),
    ];
    for (const peers of others) await peers.add(50);
    await waitFor(async () => (await refused('too_many')) >= 30, '30 connections over the total');
    // The relay counts a refusal before this process sees that connection close.
    await waitFor(() => others[0]!.closed + others[1]!.closed >= 30, '30 closes seen here');
    expect(attacker.open + others[0]!.open + others[1]!.open).toBe(120);

    // The plain health port holds its own connections to the same per-address cap.
    const plain = new SilentPeers(Number(new URL(relay.healthUrl).port), '127.0.0.4');
    const fromAddress = await refused('too_many_from_address');
    await plain.add(60);
    await waitFor(
      async () => (await refused('too_many_from_address')) - fromAddress >= 10,
      '10 plain connections over the per-address cap',
    );
    expect((await refused('too_many_from_address')) - fromAddress).toBe(10);
    expect(attacker.open).toBe(50);
  });

  it('keeps idle keep-alive connections 65 s by default on the TLS and plain listeners', async () => {
    relay = await start({});
    const health = await fetch(`${relay.healthUrl}/health`);
    await health.arrayBuffer();
    expect(health.headers.get('keep-alive')).toBe('timeout=65');
    const agent = new Agent({ keepAlive: true, ca: readFileSync(ca.caFile, 'utf8') });
    const hint = (await initializeResponse(relay.port, '127.0.0.1', agent)).headers['keep-alive'];
    agent.destroy();
    expect(hint).toBe('timeout=65');
  });
});
