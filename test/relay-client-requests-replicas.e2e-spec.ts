import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type ClientCapabilities,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { firstText, shopAgentEnv } from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { redisAvailable } from './support/redis.js';
import { RelayClusterUnderTest } from './support/relay-cluster.js';
import { type RunningRelay, sha256Entry } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';

/**
 * An MCP server's requests for its client across relay replicas: three replicas of the built
 * relay on a real Redis, the built service as agent `shop` connected to the last (with our
 * fixture server that asks its client during a tool call), and the official 1.x SDK client
 * entering through any. A session opened on another replica is served by the last, so the
 * server's request travels back on the forwarded event stream and the client's answer forward
 * again: each must reach the one client whose call is in flight, and only it.
 * A 2026 client's retry must reach the replica holding its call, even when the agent has
 * connections on several.
 *
 * Runs where redis-server is installed (`bash .ci/install-redis.sh`); REQUIRE_REDIS=1 fails
 * instead of skipping.
 */
const tokens = { shop: newToken(), alice: newToken(), bob: newToken() };
const FIXTURE = resolve(import.meta.dirname, 'fixtures/mcp-client-requests-server.mjs');
const cluster = new RelayClusterUnderTest();
let ca: TestCa;
let tlsFetch: typeof fetch;
let app: RunningApp;
const open: Client[] = [];

beforeAll(async () => {
  if (!redisAvailable) return;
  ca = createTestCa();
  tlsFetch = fetchTrusting(readFileSync(ca.caFile, 'utf8'));
  const clients = Object.fromEntries(
    (['alice', 'bob'] as const).map((name) => [
      name,
      { tokens: sha256Entry(tokens[name]), agents: ['shop'] },
    ]),
  );
  const env = {
    RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
    RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
    RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(tokens.shop) }),
    RELAY_CLIENTS: JSON.stringify(clients),
  };
  await cluster.start({ env: () => env }, 3);
  app = await startAgent(cluster.holder);
  await untilPublished('asker');
}, 90_000);

afterAll(async () => {
  await Promise.all(open.map((client) => client.close().catch(() => undefined)));
  await app?.stop();
  await cluster.stop();
});

/** Waits until Redis lists `server` up on `replicas` of the agent's, so the others route to it. */
async function untilPublished(server: string, replicas = 1): Promise<void> {
  const directory = new Redis(cluster.redis.url);
  try {
    await waitFor(
      async () => {
        const entries = Object.values(await directory.hgetall('relay:agent:shop'));
        const up = entries.filter((text) =>
          (JSON.parse(text) as { servers: string[] }).servers.includes(server),
        );
        return up.length >= replicas;
      },
      `${server} published in Redis`,
      60_000,
    );
  } finally {
    directory.disconnect();
  }
}

/** The built service as agent `shop`, connected to `relay`, with the asking fixture server. */
function startAgent(relay: RunningRelay): Promise<RunningApp> {
  return startApp({
    env: shopAgentEnv(relay, ca.caFile, tokens.shop),
    mcpServers: { mcpServers: { asker: { command: process.execPath, args: [FIXTURE] } } },
  });
}

interface InputRequired {
  resultType: string;
  requestState: string;
  inputRequests: Record<string, { method: string }>;
}

/** A raw 2026-07-28 `tools/call` of `ask_sampling` by alice, entering through `relay`. */
async function post2026(relay: RunningRelay, params: Record<string, unknown>) {
  const response = await tlsFetch(`https://localhost:${relay.port}/mcp/shop/asker`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${tokens.alice}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'ask_sampling',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'ask_sampling',
        arguments: { prompt: 'which moss?' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { sampling: {} },
        },
        ...params,
      },
    }),
  });
  return (await response.json()) as { result?: InputRequired; error?: { code: number } };
}

/** The 1.x SDK client of `who` on `relay`, declaring `capabilities`. */
async function connect(
  relay: RunningRelay,
  who: 'alice' | 'bob',
  capabilities: ClientCapabilities,
): Promise<Client> {
  const client = new Client({ name: who, version: '1.0.0' }, { capabilities });
  const url = new URL(`https://localhost:${relay.port}/mcp/shop/asker`);
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: tlsFetch,
    requestInit: { headers: { Authorization: `Bearer ${tokens[who]}` } },
  });
  await client.connect(transport);
  open.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = await client.callTool({ name, arguments: args });
  return JSON.parse(firstText(result as { content?: unknown })) as unknown;
}

/** Requests `relay` passed to the replica serving them. */
const forwarded = async (relay: RunningRelay) =>
  (await metric(relay.metricsUrl, 'relay_forwarded_requests_total{outcome="answered"}')) ?? 0;

/** A sampling handler that answers with `text`, recording each prompt it was asked. */
function samplesAs(client: Client, text: string): string[] {
  const prompts: string[] = [];
  client.setRequestHandler(CreateMessageRequestSchema, (request) => {
    const content = request.params.messages[0]?.content;
    const plain = content !== undefined && !Array.isArray(content) && content.type === 'text';
    prompts.push(plain ? content.text : JSON.stringify(content));
    return { role: 'assistant', content: { type: 'text', text }, model: 'm' };
  });
  return prompts;
}

describe.skipIf(!redisAvailable)('server-to-client requests across relay replicas (e2e)', () => {
  it('brings sampling to the client that entered through another replica, and its answer back', async () => {
    const [entry] = cluster.relays;
    if (!entry) throw new Error('no relays');
    const client = await connect(entry, 'alice', { sampling: {} });
    const prompts = samplesAs(client, 'a fern');
    const before = await forwarded(entry);
    expect(await call(client, 'ask_sampling', { prompt: 'name a plant ✓' })).toMatchObject({
      role: 'assistant',
      content: { type: 'text', text: 'a fern' },
    });
    expect(prompts).toEqual(['name a plant ✓']);
    // The call, and the client's answer to the server's request: both passed to the holder.
    expect(await forwarded(entry)).toBeGreaterThanOrEqual(before + 2);
  });

  it('passes a form elicitation and roots/list through the other replica, intact', async () => {
    const [entry] = cluster.relays;
    if (!entry) throw new Error('no relays');
    const client = await connect(entry, 'alice', { elicitation: { form: {} }, roots: {} });
    const schemas: unknown[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      schemas.push(request.params.mode === 'url' ? undefined : request.params.requestedSchema);
      return { action: 'accept', content: { name: 'Grace', color: 'red', count: 4 } };
    });
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: 'file:///srv/garden', name: 'garden' }],
    }));
    expect(await call(client, 'ask_elicitation', { message: 'Who waters?' })).toEqual({
      action: 'accept',
      content: { name: 'Grace', color: 'red', count: 4 },
    });
    expect(schemas).toEqual([expect.objectContaining({ required: ['name'] })]);
    expect(await call(client, 'ask_roots')).toEqual({
      roots: [{ uri: 'file:///srv/garden', name: 'garden' }],
    });
  });

  it("answers a 2026 client's input_required rounds through another replica (MRTR)", async () => {
    const [entry] = cluster.relays;
    if (!entry) throw new Error('no relays');
    const client = new ModernClient(
      { name: 'modern', version: '1.0.0' },
      { capabilities: { sampling: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    const prompts: unknown[] = [];
    client.setRequestHandler('sampling/createMessage', (request) => {
      prompts.push(request.params.messages[0]?.content);
      return { role: 'assistant', content: { type: 'text', text: 'a moss' }, model: 'm' };
    });
    const url = new URL(`https://localhost:${entry.port}/mcp/shop/asker`);
    const headers = { Authorization: `Bearer ${tokens.alice}` };
    await client.connect(new ModernTransport(url, { fetch: tlsFetch, requestInit: { headers } }));
    try {
      const before = await forwarded(entry);
      const result = await client.callTool({
        name: 'ask_sampling',
        arguments: { prompt: 'moss?' },
      });
      expect(prompts).toEqual([{ type: 'text', text: 'moss?' }]);
      expect(JSON.parse(firstText(result))).toMatchObject({ content: { text: 'a moss' } });
      // The call and its retry with the client's answer: both served by the agent's replica.
      expect(await forwarded(entry)).toBeGreaterThanOrEqual(before + 2);
    } finally {
      await client.close();
    }
  });

  it('asks each session, whichever replica it entered through, only during its own call', async () => {
    const [first, second, holder] = cluster.relays;
    if (!first || !second || !holder) throw new Error('no relays');
    // Two clients, and a second session of alice's on the agent's own replica.
    const sessions = {
      alice: await connect(first, 'alice', { sampling: {} }),
      bob: await connect(second, 'bob', { sampling: {} }),
      aliceAgain: await connect(holder, 'alice', { sampling: {} }),
    };
    const asked = Object.fromEntries(
      Object.entries(sessions).map(([name, client]) => [name, samplesAs(client, `from ${name}`)]),
    );
    for (let round = 0; round < 2; round++) {
      for (const [name, client] of Object.entries(sessions)) {
        expect(await call(client, 'ask_sampling', { prompt: `${name} ${round}` })).toMatchObject({
          content: { text: `from ${name}` },
        });
      }
    }
    expect(asked).toEqual({
      alice: ['alice 0', 'alice 1'],
      bob: ['bob 0', 'bob 1'],
      aliceAgain: ['aliceAgain 0', 'aliceAgain 1'],
    });
  });

  it('resumes a 2026 retry on the replica holding its call, whichever it enters (MRTR)', async () => {
    const [, middle, holder] = cluster.relays;
    if (!middle || !holder) throw new Error('no relays');
    // A second process of agent `shop` on another replica: both replicas serve `asker` here.
    const second = await startAgent(middle);
    try {
      await untilPublished('asker', 2);
      const first = await post2026(middle, {});
      expect(first.result).toMatchObject({ resultType: 'input_required' });
      const { requestState, inputRequests } = first.result!;
      // The state names its replica by an opaque tag, never by its address.
      expect(requestState).toMatch(/^[\w-]+\.[\w-]+$/);
      const key = Object.keys(inputRequests)[0]!;
      expect(inputRequests[key]).toMatchObject({ method: 'sampling/createMessage' });
      const sampled = { role: 'assistant', content: { type: 'text', text: 'a moss' }, model: 'm' };
      const done = await post2026(holder, { requestState, inputResponses: { [key]: sampled } });
      expect(done.result).toMatchObject({ resultType: 'complete' });
      expect(JSON.parse(firstText(done.result as never))).toMatchObject({
        content: { text: 'a moss' },
      });
    } finally {
      await second.stop();
    }
  }, 90_000);
});
