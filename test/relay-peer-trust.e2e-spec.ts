import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { firstText } from './fixtures/relay-e2e-support.js';
import { newToken } from './support/app-process.js';
import { closedPort } from './support/closed-port.js';
import { openRaw } from './support/raw-http.js';
import { redisAvailable } from './support/redis.js';
import { initializeMessage, RelayClusterUnderTest } from './support/relay-cluster.js';
import { type RunningRelay, sha256Entry } from './support/relay-process.js';

/**
 * Two relay replicas on a real Redis; the agent `shop` is connected to the second only, so the
 * first passes its requests on. A hostile client aims those requests elsewhere, and a listener
 * that Redis lists as a replica (as a peer on the pod network would see them) replays what it
 * was sent.
 */
const tokens = { shop: newToken(), garden: newToken(), alice: newToken() };
const cluster = new RelayClusterUnderTest();
const { redis, relays } = cluster;
/** Each address (127.0.0.2, .3, …: loopback too) may hold this many connections to a replica. */
const PER_ADDRESS = 8;

const relayEnv = () => ({
  RELAY_AGENTS: JSON.stringify({
    shop: sha256Entry(tokens.shop),
    garden: sha256Entry(tokens.garden),
  }),
  RELAY_CLIENTS: JSON.stringify({
    alice: { tokens: sha256Entry(tokens.alice), agents: ['shop', 'garden'] },
  }),
  RELAY_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
});

const initialize = JSON.stringify(initializeMessage());

/** A listener that records what reaches it and answers 503. */
async function listener(): Promise<{ server: Server; url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    seen.push(request.headers);
    request.resume();
    response.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url, seen };
}

/** `POST <absolute URL> HTTP/1.1` to `relay`: the target names a host of the client's choosing. */
async function postAbsolute(relay: RunningRelay, target: string): Promise<string> {
  const raw = await openRaw(`http://127.0.0.1:${relay.port}`);
  await raw.write(
    [
      `POST ${target}/mcp/shop/echo HTTP/1.1`,
      `Host: ${new URL(target).host}`,
      `Authorization: Bearer ${tokens.alice}`,
      'Content-Type: application/json',
      'Accept: application/json, text/event-stream',
      `Content-Length: ${Buffer.byteLength(initialize)}`,
      'Connection: close',
      '',
      initialize,
    ].join('\r\n'),
  );
  await waitFor(() => Promise.resolve(raw.closed()), 'the relay answers and closes');
  return raw.received();
}

beforeAll(() => cluster.start({ env: relayEnv, agentToken: tokens.shop }), 60_000);

afterAll(() => cluster.stop());

describe.skipIf(!redisAvailable)('the trust between relay replicas (e2e)', () => {
  it('passes an absolute-form request to the replica, never to the host it names', async () => {
    const [first] = relays;
    if (!first) throw new Error('no relays');
    const attacker = await listener();
    try {
      for (const target of [attacker.url, `http://127.0.0.1:${await closedPort()}`]) {
        const answer = await postAbsolute(first, target);
        expect(answer, target).toMatch(/^HTTP\/1\.1 200 /);
        expect(answer.toLowerCase()).toContain('mcp-session-id:');
      }
      expect(attacker.seen).toEqual([]);
    } finally {
      attacker.server.close();
    }
  });

  it('keeps a replica in rotation, and its sessions served, after a request aimed at a closed port', async () => {
    const [first] = relays;
    if (!first) throw new Error('no relays');
    const client = new Client({ name: 'relay-peer-trust', version: '1.0.0' });
    const url = new URL(`http://127.0.0.1:${first.port}/mcp/shop/echo`);
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${tokens.alice}` } },
    });
    await client.connect(transport);
    try {
      const whoami = async () =>
        firstText(await client.callTool({ name: 'whoami', arguments: {} }, { timeout: 5000 }));
      expect(await whoami()).toBe('b');
      await postAbsolute(first, `http://127.0.0.1:${await closedPort()}`);
      expect(await whoami()).toBe('b');
      expect(await metric(first.metricsUrl, 'relay_unresponsive_peers_total')).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('sends a peer a signature, never the shared secret, that holds for that request only', async () => {
    const [first, second] = relays;
    if (!first || !second) throw new Error('no relays');
    const peer = await listener();
    const directory = new Redis(redis.url);
    try {
      // Listed as the one replica holding `garden`: the first replica passes garden's requests to it.
      const entry = JSON.stringify({ servers: ['echo'], until: Date.now() + 60_000 });
      await directory.hset('relay:agent:garden', peer.url, entry);
      const sent = await fetch(`http://127.0.0.1:${first.port}/mcp/garden/echo`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${tokens.alice}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: initialize,
      });
      await sent.arrayBuffer();
      const [captured] = peer.seen;
      if (!captured) throw new Error('nothing reached the listed replica');
      const secret = (await directory.get('relay:peer-secret')) ?? '';
      expect(secret).not.toBe('');
      expect(JSON.stringify(captured)).not.toContain(secret);
      await expectReplayRefused(second, captured);
    } finally {
      await directory.hdel('relay:agent:garden', peer.url);
      directory.disconnect();
      peer.server.close();
    }
  });

  it('answers 503, not 500, for a session whose record in Redis is garbage', async () => {
    const [first] = relays;
    if (!first) throw new Error('no relays');
    const directory = new Redis(redis.url);
    try {
      const record = { owner: 'not a replica', client: 'alice', agent: 'shop', server: 'echo' };
      await directory.set('relay:session:forged', JSON.stringify({ ...record, until: 0 }));
      const response = await fetch(`http://127.0.0.1:${first.port}/mcp/shop/echo`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${tokens.alice}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Protocol-Version': '2025-11-25',
          'Mcp-Session-Id': 'forged',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).not.toBeNull();
    } finally {
      directory.disconnect();
    }
  });

  it('answers a live session 200 or 503 while Redis comes back empty, never 404 or 401', async () => {
    const [first] = relays;
    if (!first) throw new Error('no relays');
    const url = `http://127.0.0.1:${first.port}/mcp/shop/echo`;
    const opened = await fetch(url, { method: 'POST', headers: postHeaders(), body: initialize });
    const session = opened.headers.get('mcp-session-id') ?? '';
    await opened.arrayBuffer();
    expect(session).not.toBe('');
    const directory = new Redis(redis.url);
    const statuses = new Set<number>();
    try {
      await directory.flushall();
      const call = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      await waitFor(
        async () => {
          const response = await fetch(url, {
            method: 'POST',
            headers: postHeaders(session),
            body: call,
          });
          await response.arrayBuffer();
          statuses.add(response.status);
          return response.status === 200;
        },
        'the session served again',
        20_000,
      );
    } finally {
      directory.disconnect();
    }
    expect([...statuses].filter((status) => status !== 200 && status !== 503)).toEqual([]);
  });

  it("does not let clients of other addresses fill a replica's connections from its peers", async () => {
    const [first] = relays;
    if (!first) throw new Error('no relays');
    const url = `http://127.0.0.1:${first.port}/mcp/shop/echo`;
    const held: IncomingMessage[] = [];
    try {
      // Two clients within their own caps hold open event streams, each passed on to the other replica.
      for (const from of ['127.0.0.2', '127.0.0.3']) {
        for (let i = 0; i < PER_ADDRESS - 2; i++) {
          const opened = await send(from, url, 'POST', postHeaders(), initialize);
          opened.resume();
          const session = String(opened.headers['mcp-session-id']);
          const stream = await send(from, url, 'GET', {
            ...postHeaders(session),
            Accept: 'text/event-stream',
          });
          expect(stream.statusCode).toBe(200);
          held.push(stream);
        }
      }
      const other = await send('127.0.0.4', url, 'POST', postHeaders(), initialize);
      other.resume();
      expect(other.statusCode).toBe(200);
      expect(other.headers['mcp-session-id']).toBeDefined();
    } finally {
      for (const stream of held) stream.destroy();
    }
  });
});

/** The captured peer headers, without a token, on another agent, session or method: 401 each. */
async function expectReplayRefused(relay: RunningRelay, captured: IncomingHttpHeaders) {
  const failures = () => metric(relay.metricsUrl, 'relay_peer_auth_failures_total');
  const before = (await failures()) ?? 0;
  const peerHeaders = Object.fromEntries(
    Object.entries(captured).filter(([name]) => name.startsWith('x-relay-peer-')),
  ) as Record<string, string>;
  const base = `http://127.0.0.1:${relay.port}/mcp`;
  const replays: [string, string, Record<string, string>][] = [
    ['POST', `${base}/shop/echo`, {}],
    ['POST', `${base}/garden/echo`, { 'mcp-session-id': 'someone-elses' }],
    ['DELETE', `${base}/garden/echo`, {}],
  ];
  for (const [method, url, extra] of replays) {
    const response = await fetch(url, {
      method,
      headers: { ...peerHeaders, ...extra, 'Content-Type': 'application/json' },
      ...(method === 'POST' && { body: initialize }),
    });
    expect(response.status, `${method} ${url}`).toBe(401);
  }
  expect(await failures()).toBe(before + replays.length);
}

function postHeaders(session?: string): Record<string, string> {
  return {
    Authorization: `Bearer ${tokens.alice}`,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    ...(session && { 'Mcp-Protocol-Version': '2025-11-25', 'Mcp-Session-Id': session }),
  };
}

/** One request from a loopback address of the test's choosing; resolves with its headers. */
function send(
  from: string,
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method, headers, localAddress: from, agent: false }, resolve);
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}
