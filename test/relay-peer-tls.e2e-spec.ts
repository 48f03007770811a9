import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { newToken } from './support/app-process.js';
import { redisAvailable } from './support/redis.js';
import { initializeMessage, RelayClusterUnderTest } from './support/relay-cluster.js';
import { type RunningRelay, sha256Entry } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';

/**
 * Two relay replicas over TLS on a real Redis, with the test CA's certificate; the agent `shop`
 * is connected to the second. A listener with a certificate of its own, listed in Redis as a
 * replica (as anyone on the pod network who can write there could), must get no request.
 */
const tokens = { shop: newToken(), garden: newToken(), alice: newToken() };
const cluster = new RelayClusterUnderTest();
const { redis, relays } = cluster;
let ca: TestCa;

beforeAll(async () => {
  if (!redisAvailable) return;
  ca = createTestCa();
  const env = {
    RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
    RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
    RELAY_AGENTS: JSON.stringify({
      shop: sha256Entry(tokens.shop),
      garden: sha256Entry(tokens.garden),
    }),
    RELAY_CLIENTS: JSON.stringify({
      alice: { tokens: sha256Entry(tokens.alice), agents: ['shop', 'garden'] },
    }),
  };
  const caPem = readFileSync(ca.caFile, 'utf8');
  await cluster.start({ env: () => env, agentToken: tokens.shop, caPem });
}, 60_000);

afterAll(() => cluster.stop());

describe.skipIf(!redisAvailable)('TLS between relay replicas (e2e)', () => {
  it('passes requests on to a replica with the cluster certificate, to no other', async () => {
    const [first] = relays;
    if (!first) throw new Error('no relays');
    const stranger = await strangerListener();
    const directory = new Redis(redis.url);
    try {
      const opened = await initialize(first, 'shop');
      expect(opened.status).toBe(200);
      expect(opened.headers.get('mcp-session-id')).not.toBeNull();
      // The stranger is the only replica listed for `garden`.
      const entry = JSON.stringify({ servers: ['echo'], until: Date.now() + 60_000 });
      await directory.hset('relay:agent:garden', stranger.url, entry);
      const refused = await initialize(first, 'garden');
      // Answered as a JSON-RPC error: the replica serving it cannot be reached.
      expect(refused.headers.get('mcp-session-id')).toBeNull();
      expect(stranger.requests()).toBe(0);
    } finally {
      directory.disconnect();
      stranger.server.close();
    }
  });
});

async function initialize(relay: RunningRelay, agentName: string): Promise<Response> {
  const tlsFetch = fetchTrusting(readFileSync(ca.caFile, 'utf8'));
  const response = await tlsFetch(`https://localhost:${relay.port}/mcp/${agentName}/echo`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${tokens.alice}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(initializeMessage()),
  });
  await response.arrayBuffer();
  return response;
}

/** An HTTPS listener with a self-signed certificate of its own, counting requests. */
async function strangerListener(): Promise<{ server: Server; url: string; requests(): number }> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-stranger-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat(
      ['-keyout', 'key.pem', '-out', 'cert.pem', '-days', '2', '-subj', '/CN=localhost'],
      ['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    ),
    { cwd: dir, stdio: 'pipe' },
  );
  let requests = 0;
  const server = createServer(
    { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) },
    (request, response) => {
      requests++;
      request.resume();
      response.writeHead(503).end();
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url, requests: () => requests };
}
