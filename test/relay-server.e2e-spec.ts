import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { echoServer, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { ScriptedAgent } from './fixtures/relay-server/scripted-agent.js';
import { answerIn } from './support/mcp-answer.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { loggedSoFar } from './support/logged-output.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';

/**
 * The relay server end to end, over TLS from a test CA and under a base path (/relay): the
 * built plant-store service as agent `shop` (its echo MCP server), the official SDK's
 * Streamable HTTP client through the relay, and a scripted agent `lab` for the failures
 * (timeouts, a vanishing agent, caps, garbage).
 */
const BASE = '/relay';
const TIMEOUT_SECONDS = 6;
const MAX_FRAME_BYTES = 256 * 1024;
const PER_CLIENT = 3;
const PER_AGENT = 5;

const shopToken = newToken();
const labToken = newToken();
const aliceToken = newToken(); // may reach shop and lab
const bobToken = newToken(); // may reach lab only
const carolToken = newToken(); // may reach lab only

let ca: TestCa;
let caPem: string;
let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;
const scripted: ScriptedAgent[] = [];

const origin = () => `https://localhost:${relay.port}`;
const mcpUrl = (agent: string, server: string) => `${origin()}${BASE}/mcp/${agent}/${server}`;
const agentUrl = () => `wss://localhost:${relay.port}${BASE}/agent/v1/connect`;

interface Health {
  details: { agents: { agents: Record<string, { connections: number; serversUp: string[] }> } };
}
const health = async () => (await (await fetch(`${relay.healthUrl}/health`)).json()) as Health;
const agentHealth = async (agent: string) => (await health()).details.agents.agents[agent];

async function post(
  agent: string,
  server: string,
  body: unknown,
  options: { token?: string; session?: string; origin?: string } = {},
): Promise<{
  status: number;
  session: string | null;
  json: Record<string, unknown> | null;
  headers: Headers;
}> {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
  };
  if (options.token !== '') headers.Authorization = `Bearer ${options.token ?? aliceToken}`;
  if (options.session) headers['Mcp-Session-Id'] = options.session;
  if (options.origin) headers.Origin = options.origin;
  const response = await tlsFetch(mcpUrl(agent, server), {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    json: answerIn(text, response.headers.get('content-type')),
    headers: response.headers,
  };
}

const initialize = (id: number | string = 'init') => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 't', version: '1' },
  },
});

async function labSession(token = aliceToken): Promise<string> {
  const init = await post('lab', 'slow', initialize(), { token });
  expect(init.status).toBe(200);
  expect(init.session).toEqual(expect.any(String));
  return init.session!;
}

async function scriptedLab(): Promise<ScriptedAgent> {
  // Counts in /health are the only view of the relay's side: first let it notice the scripted
  // agents that are gone, then see this one greeted.
  const live = () => scripted.filter((a) => !a.gone).length;
  await waitFor(
    async () => (await agentHealth('lab'))?.connections === live(),
    'old lab pods gone',
  );
  const agent = new ScriptedAgent(agentUrl(), labToken, caPem);
  scripted.push(agent);
  await agent.connect();
  await waitFor(async () => (await agentHealth('lab'))?.connections === live(), 'lab greeted');
  return agent;
}

beforeAll(async () => {
  ca = createTestCa();
  caPem = readFileSync(ca.caFile, 'utf8');
  tlsFetch = fetchTrusting(caPem);
  relay = await startRelay({
    env: {
      RELAY_BASE_PATH: BASE,
      RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
      RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(shopToken), lab: sha256Entry(labToken) }),
      RELAY_CLIENTS: JSON.stringify({
        alice: { tokens: sha256Entry(aliceToken), agents: ['shop', 'lab'] },
        bob: { tokens: sha256Entry(bobToken), agents: ['lab'] },
        carol: { tokens: sha256Entry(carolToken), agents: ['lab'] },
      }),
      RELAY_REQUEST_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
      RELAY_MAX_FRAME_BYTES: String(MAX_FRAME_BYTES),
      RELAY_MAX_IN_FLIGHT_PER_CLIENT: String(PER_CLIENT),
      RELAY_MAX_IN_FLIGHT_PER_AGENT: String(PER_AGENT),
      RELAY_AGENT_PING_SECONDS: '2',
    },
  });
  app = await startApp({
    env: {
      SERVICE_AGENT_TOKEN: shopToken,
      SERVICE_SERVER_URL: `${origin()}${BASE}`,
      NODE_EXTRA_CA_CERTS: ca.caFile,
    },
    mcpServers: { mcpServers: { echo: echoServer() } },
  });
});

afterAll(async () => {
  for (const agent of scripted) agent.vanish();
  await app?.stop();
  await relay?.stop();
});

describe('relay server configuration (e2e)', () => {
  it('refuses to start on a bad configuration, naming every problem, exit 78', async () => {
    const bad = await startRelay({
      waitForHealth: false,
      env: {
        RELAY_PORT: '70000',
        RELAY_AGENTS: JSON.stringify({ shop: 'sha256:123' }),
        RELAY_CLIENTS: JSON.stringify({
          alice: { tokens: sha256Entry(aliceToken), agents: ['nope'] },
        }),
        RELAY_TLS_CERT_FILE: '/nonexistent.pem',
        RELAY_PUBLIC_URL: 'https://relay.example.com',
      },
    });
    expect(await bad.exited).toBe(78);
    const output = bad.output();
    expect(output).toContain('RELAY_PORT must be a whole number from 0 to 65535');
    expect(output).toContain('RELAY_AGENTS.shop entry 1 must be sha256: followed by 64 hex digits');
    expect(output).toContain(
      'RELAY_CLIENTS.alice.agents names "nope", which is not in RELAY_AGENTS',
    );
    expect(output).toContain('- RELAY_TLS_CERT_FILE and RELAY_TLS_KEY_FILE must be set together');
    expect(output).toContain(
      '- RELAY_OAUTH_ISSUER is required when RELAY_PUBLIC_URL is set (the URL is used for OAuth only)',
    );
  });
});

describe('relay server with the plant-store agent (e2e)', () => {
  it('accepts the agent and shows its connection and servers in /health and /metrics', async () => {
    await waitFor(
      async () => (await agentHealth('shop'))?.serversUp.includes('echo'),
      'shop connected with echo up',
      30_000,
    );
    expect((await agentHealth('shop'))?.connections).toBe(1);
    expect(await metric(relay.metricsUrl, 'relay_agent_connections{agent="shop"}')).toBe(1);
    const output = await loggedSoFar(relay, mcpUrl('shop', 'echo'), tlsFetch);
    expect(output).not.toContain(shopToken);
    expect(output).not.toContain(aliceToken);
  });

  it('relays initialize, tools/list and tools/call for the official SDK client', async () => {
    await waitFor(async () => (await agentHealth('shop'))?.serversUp.includes('echo'), 'echo up');
    const client = new Client({ name: 'relay-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl('shop', 'echo')), {
      fetch: tlsFetch,
      requestInit: { headers: { Authorization: `Bearer ${aliceToken}` } },
    });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()).toMatchObject({ name: 'echo-fixture' });
      expect(transport.sessionId).toEqual(expect.any(String));
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toEqual(['echo', 'crash', 'env']);
      const result = await client.callTool({
        name: 'echo',
        arguments: { text: 'through the relay' },
      });
      expect(result.content).toEqual([{ type: 'text', text: 'through the relay' }]);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    expect(
      await metric(relay.metricsUrl, 'relay_mcp_requests_total{agent="shop",outcome="ok"}'),
    ).toBeGreaterThanOrEqual(3);
  });

  it('answers 401 for a missing or wrong client token, and for an agent token', async () => {
    for (const token of ['', newToken(), shopToken]) {
      const answer = await post('shop', 'echo', initialize(), { token });
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    }
  });

  it('answers 403 to a web page of another origin (DNS rebinding), with or without a token', async () => {
    const refusals = () => metric(relay.metricsUrl, 'relay_origin_refusals_total');
    const before = (await refusals()) ?? 0;
    for (const origin of [
      'http://evil.example.com',
      `https://evil.example.com:${relay.port}`,
      'null',
    ]) {
      for (const token of [undefined, '']) {
        const answer = await post('shop', 'echo', initialize(), { origin, token });
        expect(answer.status, origin).toBe(403);
      }
    }
    expect(await refusals()).toBe(before + 6);
    // A page served from loopback, and a client outside a browser (no Origin), are served.
    for (const origin of [`https://localhost:${relay.port}`, 'http://127.0.0.1:3000', undefined]) {
      expect((await post('shop', 'echo', initialize(), { origin })).status).toBe(200);
    }
  });

  it('answers the same 404 for an agent the client may not reach and for a missing one', async () => {
    const notAllowed = await post('shop', 'echo', initialize(), { token: bobToken });
    const missing = await post('nope', 'echo', initialize(), { token: bobToken });
    expect(notAllowed.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(notAllowed.json).toEqual(missing.json);
    // Precondition: the same request with an allowed client does reach shop.
    expect((await post('shop', 'echo', initialize())).status).toBe(200);
  });

  it('refuses an agent upgrade with a wrong token (401) or a client token, logging it sparingly', async () => {
    const lines = () => relay.output().split('agent token refused').length - 1;
    const before = lines();
    for (const token of [newToken(), aliceToken, ...Array.from({ length: 20 }, newToken)]) {
      const agent = new ScriptedAgent(agentUrl(), token, caPem);
      await expect(agent.connect()).rejects.toThrow('HTTP 401');
    }
    expect(
      await metric(relay.metricsUrl, 'relay_agent_rejections_total{reason="unauthorized"}'),
    ).toBeGreaterThanOrEqual(22);
    // A line logged after the refusals proves the log is written up to here (pino writes in
    // order): 22 refusals within seconds made one line, as the throttle allows one per 10 s.
    const connected = () => relay.output().split('agent connected').length - 1;
    const connectedBefore = connected();
    const marker = await scriptedLab();
    await waitFor(() => connected() > connectedBefore, 'a later log line');
    marker.vanish();
    expect(lines() - before).toBe(1);
    expect(relay.output()).not.toContain(aliceToken);
  });

  it('needs a session for everything but initialize, and 404s an unknown one', async () => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    expect((await post('shop', 'echo', list)).status).toBe(400);
    const unknown = await post('shop', 'echo', list, { session: 'no-such-session' });
    expect(unknown.status).toBe(404);
    const parse = await post('shop', 'echo', '{not json');
    expect(parse.status).toBe(400);
    expect(parse.json).toMatchObject({ error: { code: -32700 } });
  });
});

describe('relay server failures, with a scripted agent (e2e)', () => {
  it('answers a request the agent never answers with a JSON-RPC timeout error', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    const answer = await post(
      'lab',
      'slow',
      { jsonrpc: '2.0', id: 'slow-1', method: 'tools/call', params: { name: 'x' } },
      { session },
    );
    expect(lab.requests).toHaveLength(1);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      jsonrpc: '2.0',
      id: 'slow-1',
      error: {
        code: -32003,
        message: `agent "lab" did not answer within ${TIMEOUT_SECONDS * 1000} ms`,
      },
    });
    // The agent was told to stop working on it.
    await waitFor(
      () => lab.calls.find((c) => c.message.method === 'notifications/cancelled'),
      'notifications/cancelled sent to the agent',
    );
    lab.vanish();
  });

  it('answers every waiting client when the agent vanishes, and ends its sessions', async () => {
    const lab = await scriptedLab();
    const sessions = [await labSession(aliceToken), await labSession(bobToken)];
    const waiting = sessions.map((session, i) =>
      post(
        'lab',
        'slow',
        { jsonrpc: '2.0', id: i, method: 'tools/call' },
        { session, token: i === 0 ? aliceToken : bobToken },
      ),
    );
    await waitFor(() => lab.requests.length === 2, 'both requests at the agent');
    lab.vanish();
    for (const answer of await Promise.all(waiting)) {
      expect(answer.status).toBe(200);
      expect(answer.json).toMatchObject({
        error: { code: -32001, message: 'the connection of agent "lab" closed before it answered' },
      });
    }
    const after = await post(
      'lab',
      'slow',
      { jsonrpc: '2.0', id: 9, method: 'tools/list' },
      { session: sessions[0] },
    );
    expect(after.status).toBe(404);
  });

  it('caps requests in flight per client, per client of an agent and per agent (429)', async () => {
    const lab = await scriptedLab();
    const [alice, bob, carol] = await Promise.all(
      [aliceToken, bobToken, carolToken].map((token) => labSession(token)),
    );
    const overloaded = async () =>
      (await metric(
        relay.metricsUrl,
        'relay_mcp_requests_total{agent="lab",outcome="overloaded"}',
      )) ?? 0;
    const refusedBefore = await overloaded();
    const call = (id: number, session: string, token: string) =>
      post('lab', 'slow', { jsonrpc: '2.0', id, method: 'tools/call' }, { session, token });
    const held = [1, 2, 3].map((id) => call(id, alice!, aliceToken));
    await waitFor(() => lab.requests.length === PER_CLIENT, 'alice at her cap');
    const overClient = await call(4, alice!, aliceToken);
    expect(overClient.status).toBe(429);
    expect(overClient.json).toMatchObject({ id: 4, error: { code: -32005 } });

    // Of lab's 2 free slots bob may hold 1 (no more than stay free): carol still finds one.
    held.push(call(5, bob!, bobToken));
    await waitFor(() => lab.requests.length === PER_CLIENT + 1, 'bob holding one');
    const overShare = await call(6, bob!, bobToken);
    expect(overShare.status).toBe(429);
    expect(overShare.json).toMatchObject({
      error: { message: expect.stringContaining('share of agent "lab"') as unknown },
    });
    held.push(call(7, carol!, carolToken));
    await waitFor(() => lab.requests.length === PER_AGENT, 'lab at its cap');
    const overAgent = await call(8, carol!, carolToken);
    expect(overAgent.status).toBe(429);
    expect(overAgent.json).toMatchObject({
      error: { message: expect.stringContaining('for agent "lab"') as unknown },
    });
    expect((await overloaded()) - refusedBefore).toBe(3);

    for (const request of lab.requests) lab.answer(request, { content: [] });
    for (const answer of await Promise.all(held)) expect(answer.status).toBe(200);
    // Released: the next request goes through again.
    const again = call(9, alice!, aliceToken);
    const ninth = await waitFor(() => lab.requests[PER_AGENT], 'request 9 at the agent');
    lab.answer(ninth, { content: [{ type: 'text', text: 'nine' }] });
    expect((await again).json).toMatchObject({ id: 9, result: { content: [{ text: 'nine' }] } });
    lab.vanish();
  });

  it('tracks several connections of one agent and keeps a session on its connection', async () => {
    const pods = [await scriptedLab(), await scriptedLab()];
    expect((await agentHealth('lab'))?.connections).toBe(2);
    const sessions: string[] = [];
    for (let i = 0; i < 4; i++) sessions.push(await labSession());
    // Round robin spreads new sessions over both pods.
    expect(pods.every((pod) => pod.calls.some((c) => c.message.method === 'initialize'))).toBe(
      true,
    );
    const podOf = async (id: string, session: string) => {
      const before = pods.map((pod) => pod.requests.length);
      const answered = post(
        'lab',
        'slow',
        { jsonrpc: '2.0', id, method: 'tools/call' },
        { session },
      );
      const pod = await waitFor(
        () => pods.find((p, i) => p.requests.length > before[i]!),
        `request ${id} at a pod`,
      );
      pod.answer(pod.requests.at(-1)!, { content: [] });
      expect((await answered).status).toBe(200);
      return pod;
    };
    for (const session of sessions) {
      const first = await podOf(`${session}-1`, session);
      expect(await podOf(`${session}-2`, session)).toBe(first);
      expect(await podOf(`${session}-3`, session)).toBe(first);
    }
    for (const pod of pods) pod.vanish();
    await waitFor(async () => (await agentHealth('lab'))?.connections === 0, 'lab pods gone');
  });

  it('passes a client cancellation on with the agent-side id, and a hang-up as a cancellation', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    const cancelled = () => lab.calls.filter((c) => c.message.method === 'notifications/cancelled');

    const waiting = post(
      'lab',
      'slow',
      { jsonrpc: '2.0', id: 'c-1', method: 'tools/call' },
      { session },
    );
    const request = await waitFor(() => lab.requests[0], 'the request at the agent');
    const cancel = await post(
      'lab',
      'slow',
      {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'c-1', reason: 'user' },
      },
      { session },
    );
    expect(cancel.status).toBe(202);
    await waitFor(() => cancelled().length === 1, 'notifications/cancelled at the agent');
    expect(cancelled()[0]?.message.params).toEqual({
      requestId: request.message.id,
      reason: 'user',
    });
    expect((await waiting).json).toMatchObject({ id: 'c-1', error: { code: -32800 } });

    const hangUp = new AbortController();
    const abandoned = tlsFetch(mcpUrl('lab', 'slow'), {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${aliceToken}`,
        'Mcp-Session-Id': session,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'c-2', method: 'tools/call' }),
      signal: hangUp.signal,
    });
    const second = await waitFor(() => lab.requests[1], 'the second request at the agent');
    hangUp.abort();
    await expect(abandoned).rejects.toThrow();
    await waitFor(() => cancelled().length === 2, 'the hang-up passed on as a cancellation');
    expect(cancelled()[1]?.message.params).toMatchObject({ requestId: second.message.id });
    lab.vanish();
  });

  it("streams a request's progress to the SDK client, with its own token, before the result", async () => {
    const lab = await scriptedLab();
    const client = new Client({ name: 'relay-e2e-progress', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl('lab', 'slow')), {
      fetch: tlsFetch,
      requestInit: { headers: { Authorization: `Bearer ${aliceToken}` } },
    });
    await client.connect(transport);
    try {
      const progress: number[] = [];
      const result = client.callTool(
        { name: 'work', arguments: {} },
        { onprogress: (p) => progress.push(p.progress) },
      );
      const call = await waitFor(
        () => lab.requests.find((r) => r.message.method === 'tools/call'),
        'tools/call at the agent',
      );
      const meta = call.message.params?._meta as { progressToken?: unknown };
      // The relay's own token reaches the agent, not the client's.
      expect(meta.progressToken).toMatch(/^relay-[A-Za-z0-9_-]{22}$/);
      for (const step of [1, 2, 3]) {
        lab.send({
          type: 'rpc',
          server: 'slow',
          message: {
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: meta.progressToken, progress: step, total: 3 },
          },
        });
      }
      lab.answer(call, { content: [{ type: 'text', text: 'done' }] });
      expect((await result).content).toEqual([{ type: 'text', text: 'done' }]);
      expect(progress).toEqual([1, 2, 3]);
    } finally {
      await client.close();
      lab.vanish();
    }
  });

  it('holds at most the frame limit for a client that does not read its event stream', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'slow-reader',
      method: 'tools/call',
      params: { name: 'work', _meta: { progressToken: 'mine' } },
    });
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpsRequest(
        mcpUrl('lab', 'slow'),
        {
          method: 'POST',
          ca: caPem,
          headers: {
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            Authorization: `Bearer ${aliceToken}`,
            'Mcp-Session-Id': session,
          },
        },
        resolve,
      );
      req.on('error', reject);
      req.end(body);
      void waitFor(() => lab.requests[0], 'the call at the agent').then((call) => {
        const token = (call.message.params?._meta as { progressToken: string }).progressToken;
        lab.send({
          type: 'rpc',
          server: 'slow',
          message: {
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: token, progress: 0 },
          },
        });
      });
    });
    expect(response.headers['content-type']).toBe('text/event-stream');
    response.pause(); // the client stops reading
    const call = lab.requests[0]!;
    const token = (call.message.params?._meta as { progressToken: string }).progressToken;
    const events = 1000;
    for (let i = 1; i <= events; i++) {
      lab.send({
        type: 'rpc',
        server: 'slow',
        message: {
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: { progressToken: token, progress: i, message: 'x'.repeat(10_000) },
        },
      });
    }
    await waitFor(
      async () =>
        ((await metric(relay.metricsUrl, 'relay_progress_dropped_total{agent="lab"}')) ?? 0) > 0,
      'progress dropped for the client that does not read',
    );
    lab.answer(call, { content: [{ type: 'text', text: 'done' }] });
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.resume();
    await new Promise((resolve) => response.on('end', resolve));
    const messages = Buffer.concat(chunks)
      .toString('utf8')
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as { params?: { progressToken?: unknown } });
    expect(messages.length).toBeLessThan(events);
    expect(messages[0]?.params?.progressToken).toBe('mine');
    expect(messages.at(-1)).toEqual({
      jsonrpc: '2.0',
      id: 'slow-reader',
      result: { content: [{ type: 'text', text: 'done' }] },
    });
    lab.vanish();
  });

  it('sends list_changed from the MCP server to the SDK client on its event stream', async () => {
    const lab = await scriptedLab();
    const client = new Client({ name: 'relay-e2e-changes', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl('lab', 'slow')), {
      fetch: tlsFetch,
      requestInit: { headers: { Authorization: `Bearer ${aliceToken}` } },
    });
    let changes = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changes++;
    });
    const streams = () => metric(relay.metricsUrl, 'relay_mcp_event_streams{agent="lab"}');
    const before = (await streams()) ?? 0;
    await client.connect(transport);
    try {
      await waitFor(
        async () => ((await streams()) ?? 0) > before,
        "the client's event stream open",
      );
      lab.send({
        type: 'rpc',
        server: 'slow',
        message: { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      });
      // Another server's notification does not reach this session.
      lab.send({
        type: 'rpc',
        server: 'other',
        message: { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      });
      await waitFor(() => changes > 0, 'list_changed at the client');
      expect(changes).toBe(1);
    } finally {
      await transport.terminateSession();
      await client.close();
      lab.vanish();
    }
    await waitFor(async () => (await streams()) === before, 'the event stream closed');
  });

  it('answers 413 for a request body over the limit', async () => {
    const big = await post('shop', 'echo', {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { padding: 'x'.repeat(MAX_FRAME_BYTES) },
    });
    expect(big.status).toBe(413);
    // Precondition of the limit: the same request under it is served.
    expect((await post('shop', 'echo', initialize())).status).toBe(200);
  });

  it('never sends the agent a frame over the limit: the client gets -32004 or 413, the agent keeps its connection', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    /** A message padded so its body is one byte under the limit: the frame around it is over. */
    const padded = (message: Record<string, unknown>) => {
      const empty = JSON.stringify({ ...message, params: { padding: '' } });
      return { ...message, params: { padding: 'x'.repeat(MAX_FRAME_BYTES - 1 - empty.length) } };
    };
    const request = padded({ jsonrpc: '2.0', id: 'big', method: 'tools/call' });
    expect(JSON.stringify(request).length).toBe(MAX_FRAME_BYTES - 1);
    const answer = await post('lab', 'slow', request, { session });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ id: 'big', error: { code: -32004 } });
    expect(JSON.stringify(answer.json)).toContain('frame limit');
    const note = await post('lab', 'slow', padded({ jsonrpc: '2.0', method: 'notifications/x' }), {
      session,
    });
    expect(note.status).toBe(413);
    expect(note.json).toMatchObject({ error: { code: -32004 } });
    // The session and connection still work; nothing oversized reached the agent.
    const small = post(
      'lab',
      'slow',
      { jsonrpc: '2.0', id: 'small', method: 'tools/call' },
      {
        session,
      },
    );
    await waitFor(() => lab.requests.length === 1, 'the small request at the agent');
    expect(lab.calls.some((c) => c.message.method === 'notifications/x')).toBe(false);
    lab.answer(lab.requests[0]!, { ok: true });
    expect((await small).json).toMatchObject({ id: 'small', result: { ok: true } });
    expect(lab.closeCode).toBeUndefined();
    lab.vanish();
  });

  it('refuses a second request with an id already in flight in the session', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    const request = { jsonrpc: '2.0', id: 'twice', method: 'tools/call' };
    const first = post('lab', 'slow', request, { session });
    await waitFor(() => lab.requests.length === 1, 'the first request at the agent');
    const second = await post('lab', 'slow', request, { session });
    expect(second.json).toMatchObject({ id: 'twice', error: { code: -32600 } });
    expect(lab.requests).toHaveLength(1);
    lab.answer(lab.requests[0]!, { first: true });
    expect((await first).json).toMatchObject({ id: 'twice', result: { first: true } });
    lab.vanish();
  });

  it('counts an answer only from the server the request was sent to', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    const waiting = post(
      'lab',
      'slow',
      { jsonrpc: '2.0', id: 'mine', method: 'tools/call' },
      {
        session,
      },
    );
    await waitFor(() => lab.requests.length === 1, 'the request at the agent');
    const call = lab.requests[0]!;
    const dropped = () => relay.output().split('dropping an answer from a server').length - 1;
    const before = dropped();
    lab.answer({ ...call, server: 'other' }, { forged: true });
    await waitFor(() => dropped() > before, 'the misdirected answer dropped and logged');
    lab.answer(call, { genuine: true });
    expect((await waiting).json).toEqual({ jsonrpc: '2.0', id: 'mine', result: { genuine: true } });
    lab.vanish();
  });

  it('drops an agent connection that sends garbage or an oversized frame, and keeps serving', async () => {
    const garbage = await scriptedLab();
    for (let i = 0; i < 1000; i++) garbage.sendRaw('\u0000 not json at all');
    expect(await garbage.closed).toBe(1008);

    const oversized = await scriptedLab();
    oversized.send({ type: 'inventory', servers: [], padding: 'x'.repeat(MAX_FRAME_BYTES) });
    expect(await oversized.closed).toBe(1009);

    expect(
      await metric(relay.metricsUrl, 'relay_agent_rejections_total{reason="invalid_frame"}'),
    ).toBeGreaterThanOrEqual(1);
    // The relay and the well-behaved agent are unharmed.
    expect((await fetch(`${relay.healthUrl}/health`)).status).toBe(200);
    const init = await post('shop', 'echo', initialize());
    const call = await post(
      'shop',
      'echo',
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'still here' } },
      },
      { session: init.session! },
    );
    expect(call.json).toMatchObject({ result: { content: [{ text: 'still here' }] } });
  });
});

describe('relay server against hostile agents (e2e)', () => {
  /** JSON text `levels` objects deep; built as text, as JSON.stringify itself would overflow. */
  const deep = (levels: number) => '{"a":'.repeat(levels) + '{}' + '}'.repeat(levels);
  const rpc = (message: string) => `{"type":"rpc","server":"slow","message":${message}}`;

  it('drops an agent whose notification is nested past 100 levels, and keeps serving', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    // An open event stream is where a list_changed goes (and where JSON.stringify threw).
    const streams = () => metric(relay.metricsUrl, 'relay_mcp_event_streams{agent="lab"}');
    const before = (await streams()) ?? 0;
    const hangUp = new AbortController();
    const stream = await tlsFetch(mcpUrl('lab', 'slow'), {
      headers: {
        Authorization: `Bearer ${aliceToken}`,
        Accept: 'text/event-stream',
        'Mcp-Session-Id': session,
      },
      signal: hangUp.signal,
    });
    expect(stream.status).toBe(200);
    await waitFor(async () => ((await streams()) ?? 0) > before, 'the event stream open');
    lab.sendRaw(
      rpc(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":${deep(20_000)}}`),
    );
    expect(await lab.closed).toBe(1008);
    hangUp.abort();

    const progress = await scriptedLab();
    progress.sendRaw(
      rpc(`{"jsonrpc":"2.0","method":"notifications/progress","params":${deep(20_000)}}`),
    );
    expect(await progress.closed).toBe(1008);
    expect(relay.child.exitCode).toBeNull();
    expect((await fetch(`${relay.healthUrl}/health`)).status).toBe(200);
    await waitFor(
      () => relay.output().includes('nested deeper than 100 levels'),
      'the drop logged',
    );
  });

  it('answers a client body nested 20,000 deep with a clear 400, not a 500', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    const body = `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":${deep(20_000)}}`;
    const answer = await post('lab', 'slow', body, { session });
    // Refused as it is read (read-json-body.ts), before it is parsed or routed.
    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({
      message: expect.stringContaining('too deeply nested') as unknown,
    });
    expect(lab.requests).toHaveLength(0);
    // Nothing is left waiting: the in-flight gauge is back to zero.
    expect(await metric(relay.metricsUrl, 'relay_mcp_requests_in_flight{agent="lab"}')).toBe(0);
    lab.vanish();
  });

  it('drops an agent whose answer is nested past 100 levels, answering the waiting client', async () => {
    const lab = await scriptedLab();
    const session = await labSession();
    const waiting = post(
      'lab',
      'slow',
      { jsonrpc: '2.0', id: 'deep', method: 'tools/call', params: { name: 'x' } },
      { session },
    );
    await waitFor(() => lab.requests.length === 1, 'the request at the agent');
    const id = lab.requests[0]!.message.id!;
    lab.sendRaw(rpc(`{"jsonrpc":"2.0","id":${id},"result":${deep(20_000)}}`));
    expect(await lab.closed).toBe(1008);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ id: 'deep', error: { code: -32001 } });
    expect(relay.child.exitCode).toBeNull();
  });
});

describe('relay server lifecycle (e2e)', () => {
  it('drops an agent connection that stops answering pings, and answers its waiting clients', async () => {
    const noPong = () => metric(relay.metricsUrl, 'relay_agent_rejections_total{reason="no_pong"}');
    const droppedBefore = (await noPong()) ?? 0;
    const frozen = new ScriptedAgent(agentUrl(), labToken, caPem, ['slow'], false);
    const live = () => scripted.filter((a) => !a.gone).length;
    await waitFor(
      async () => (await agentHealth('lab'))?.connections === live(),
      'old lab pods gone',
    );
    scripted.push(frozen);
    await frozen.connect();
    await waitFor(async () => (await agentHealth('lab'))?.connections === live(), 'frozen greeted');
    const session = await labSession();
    const waiting = post(
      'lab',
      'slow',
      { jsonrpc: '2.0', id: 'f', method: 'tools/call' },
      { session },
    );
    await waitFor(() => frozen.requests.length === 1, 'the request at the frozen pod');
    expect((await waiting).json).toMatchObject({
      id: 'f',
      error: { code: -32001, message: 'the connection of agent "lab" closed before it answered' },
    });
    expect(await frozen.closed).toBe(1006);
    expect(await noPong()).toBeGreaterThan(droppedBefore);
  });

  it('drops a connection that never says hello', async () => {
    const silent = new WebSocket(agentUrl(), {
      ca: caPem,
      headers: { Authorization: `Bearer ${labToken}` },
    });
    const code = await new Promise<number>((resolve, reject) => {
      silent.on('error', reject);
      silent.on('close', resolve);
    });
    expect(code).toBe(1008);
    expect(await metric(relay.metricsUrl, 'relay_agent_rejections_total{reason="no_hello"}')).toBe(
      1,
    );
  }, 30_000);

  it.each(['SIGTERM', 'SIGHUP'] as const)(
    'on %s tells agents 1001, answers waiting clients, and exits 0',
    async (signal) => {
      const token = newToken();
      const own = await startRelay({
        env: {
          RELAY_AGENTS: JSON.stringify({ lab: sha256Entry(labToken) }),
          RELAY_CLIENTS: JSON.stringify({ alice: { tokens: sha256Entry(token), agents: ['lab'] } }),
        },
      });
      try {
        const lab = new ScriptedAgent(
          `ws://127.0.0.1:${own.port}/agent/v1/connect`,
          labToken,
          caPem,
        );
        await lab.connect();
        const url = `http://127.0.0.1:${own.port}/mcp/lab/slow`;
        const headers = {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          Authorization: `Bearer ${token}`,
        };
        const init = await waitFor(async () => {
          const response = await fetch(url, {
            method: 'POST',
            headers,
            body: JSON.stringify(initialize()),
          });
          return response.headers.get('mcp-session-id') ?? undefined;
        }, 'a session on the scripted agent');
        const waiting = fetch(url, {
          method: 'POST',
          headers: { ...headers, 'Mcp-Session-Id': init },
          body: JSON.stringify({ jsonrpc: '2.0', id: 'held', method: 'tools/call' }),
        }).then(async (r) => answerIn(await r.text(), r.headers.get('content-type')));
        await waitFor(() => lab.requests.length === 1, 'the request at the agent');

        await own.stop(signal);
        expect(await own.exited).toBe(0);
        expect(await lab.closed).toBe(1001);
        expect(await waiting).toMatchObject({ id: 'held', error: { code: -32001 } });
      } finally {
        await own.stop('SIGKILL');
      }
    },
  );
});
