import { readFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { hostileServer, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  connectMcp,
  firstText,
  relayFixtureServer,
  shopAgentEnv,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';
import { initializeMessage } from './support/relay-cluster.js';

/**
 * Memory the relay holds for clients that do not read their event streams is bounded per client
 * and in total, with the defaults, under the chart's pod limit (512Mi): the built relay runs
 * with a 256 MiB V8 heap and its RSS is sampled from /proc while one client holds 100 sessions
 * with a GET stream each that it never reads, and a server logs 16 x 1 MiB to all of them
 * (1.6 GB as the streams would hold it, far past the 16 MiB a client may). Another client
 * keeps being served throughout.
 */
const RSS_LIMIT_MIB = 400;
const SESSIONS = 100;
const agentToken = newToken();
const tokens = { mallory: newToken(), alice: newToken() };

let ca: TestCa;
let caPem: string;
let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;
const held: ClientRequest[] = [];

const url = (server: string) => `https://localhost:${relay.port}/mcp/shop/${server}`;
/**
 * The kernel caches TCP metrics per address pair: after many loopback connections it lets a new
 * socket buffer a whole unread answer, out of the relay's sight. A fresh source address avoids it.
 */
const unreadFrom = `127.${1 + Math.floor(Math.random() * 254)}.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 254)}`;
const headers = (session?: string) => ({
  Authorization: `Bearer ${tokens.mallory}`,
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  ...(session && { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' }),
});

async function post(session: string | undefined, body: unknown): Promise<Response> {
  return tlsFetch(url('loud'), {
    method: 'POST',
    headers: headers(session),
    body: JSON.stringify(body),
  });
}

/** A session of mallory's that asked for logging, with a GET stream it never reads. */
async function unreadStream(n: number): Promise<string> {
  const init = await post(undefined, initializeMessage(1, `m${n}`));
  const session = init.headers.get('mcp-session-id');
  await init.text();
  if (!session) throw new Error(`no session: ${init.status}`);
  const level = await post(session, {
    jsonrpc: '2.0',
    id: 2,
    method: 'logging/setLevel',
    params: { level: 'debug' },
  });
  expect(level.status).toBe(200);
  await level.text();
  await new Promise<void>((resolve, reject) => {
    const get = request(
      url('loud'),
      {
        method: 'GET',
        headers: { ...headers(session), Accept: 'text/event-stream' },
        ca: caPem,
        agent: false,
      },
      // Never read: the response stays paused, its socket's buffers fill up.
      (response) =>
        response.statusCode === 200 ? resolve() : reject(new Error(`GET ${response.statusCode}`)),
    );
    get.on('error', () => undefined);
    get.end();
    held.push(get);
  });
  return session;
}

const eventStreams = async () =>
  (await metric(relay.metricsUrl, 'relay_mcp_event_streams{agent="shop"}')) ?? 0;

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kib ?? 0) / 1024;
}

beforeAll(async () => {
  ca = createTestCa();
  caPem = readFileSync(ca.caFile, 'utf8');
  tlsFetch = fetchTrusting(caPem);
  relay = await startRelay({
    env: {
      NODE_OPTIONS: '--max-old-space-size=256',
      RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
      RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(agentToken) }),
      RELAY_CLIENTS: JSON.stringify({
        mallory: { tokens: sha256Entry(tokens.mallory), agents: ['shop'] },
        alice: { tokens: sha256Entry(tokens.alice), agents: ['shop'] },
      }),
    },
  });
  app = await startApp({
    env: shopAgentEnv(relay, ca.caFile, agentToken),
    mcpServers: { mcpServers: { loud: hostileServer(), fixture: relayFixtureServer() } },
  });
  await untilShopServersUp(relay, ['loud', 'fixture']);
});

afterAll(async () => {
  for (const get of held) get.destroy();
  await app?.stop();
  await relay?.stop();
});

describe('event stream buffer budgets under the pod limit (e2e)', () => {
  it("closes a client's unread streams past its budget and keeps serving another client", async () => {
    const pid = relay.child.pid!;
    let peak = rssMiB(pid);
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, rssMiB(pid));
      } catch {
        // The relay is gone: the assertions below say so.
      }
    }, 50);
    const alice = await connectMcp(url('fixture'), tokens.alice, tlsFetch, 'alice');
    try {
      await waitFor(async () => (await eventStreams()) === 1, "alice's GET stream");
      const sessions: string[] = [];
      for (let n = 0; n < SESSIONS; n++) sessions.push(await unreadStream(n));
      expect(await eventStreams()).toBe(1 + SESSIONS);

      // Alice's calls go on while the server logs; each must be answered.
      let answered = 0;
      let attacking = true;
      const aliceCalls = (async () => {
        while (attacking) {
          const pidText = firstText(await alice.client.callTool({ name: 'pid', arguments: {} }));
          expect(Number(pidText)).toBeGreaterThan(0);
          answered++;
        }
      })();
      // One of mallory's own sessions makes the server log: it is the server's only client.
      const call = await post(sessions[0], {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'log-large', arguments: { count: 16, bytes: 1024 * 1024 } },
      });
      expect(call.status).toBe(200);
      expect(await call.text()).toContain('logged large');
      const before = answered;
      await waitFor(() => answered > before + 3, 'alice served after the logging');
      attacking = false;
      await aliceCalls;

      expect(relay.child.exitCode).toBeNull();
      expect(peak).toBeLessThan(RSS_LIMIT_MIB);
      const closed = await metric(
        relay.metricsUrl,
        'relay_event_streams_closed_total{agent="shop",budget="client"}',
      );
      expect(closed).toBeGreaterThan(0);
    } finally {
      for (const get of held.splice(0)) get.destroy();
      clearInterval(sampler);
      await alice.close().catch(() => undefined);
    }
  });

  it('refuses the requests of a client that does not read its answers, past its budget', async () => {
    const pid = relay.child.pid!;
    let peak = rssMiB(pid);
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, rssMiB(pid));
      } catch {
        // The relay is gone: the assertions below say so.
      }
    }, 50);
    const alice = await connectMcp(url('fixture'), tokens.alice, tlsFetch, 'alice');
    const init = await tlsFetch(url('fixture'), {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify(initializeMessage(1, 'm')),
    });
    const session = init.headers.get('mcp-session-id')!;
    await init.text();
    const statuses: number[] = [];
    try {
      // 30 rounds of 10 answers of 4 MB that mallory never reads: 1.2 GB, past any pod.
      for (let round = 0; round < 30; round++) {
        const answered: Promise<void>[] = [];
        for (let i = 0; i < 10; i++) {
          answered.push(
            new Promise((resolve) => {
              const call = request(
                url('fixture'),
                {
                  method: 'POST',
                  headers: headers(session),
                  ca: caPem,
                  agent: false,
                  localAddress: unreadFrom,
                },
                // Never read: the answer stays in the relay's buffers until the budget says no.
                (response) => {
                  statuses.push(response.statusCode ?? 0);
                  resolve();
                },
              );
              call.on('error', () => resolve());
              call.end(
                JSON.stringify({
                  jsonrpc: '2.0',
                  id: `${round}-${i}`,
                  method: 'tools/call',
                  params: { name: 'large', arguments: { bytes: 4_000_000 } },
                }),
              );
              held.push(call);
            }),
          );
        }
        await Promise.all(answered);
        // A call answers on an event stream at once; its answer counts once it is at the relay.
        await waitFor(
          async () =>
            (await metric(relay.metricsUrl, 'relay_mcp_requests_in_flight{agent="shop"}')) === 0,
          'the round answered at the relay',
        );
      }
      expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(200);
      expect(firstText(await alice.client.callTool({ name: 'pid', arguments: {} }))).toMatch(
        /^\d+$/,
      );
      expect(relay.child.exitCode).toBeNull();
      expect(peak).toBeLessThan(RSS_LIMIT_MIB);
      const refused = await metric(
        relay.metricsUrl,
        'relay_unread_refusals_total{agent="shop",budget="client"}',
      );
      expect(refused).toBeGreaterThan(200);
    } finally {
      clearInterval(sampler);
      await alice.close().catch(() => undefined);
    }
  });
});
