import { resolve } from 'node:path';
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
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  firstText,
  startShopPath,
  stopShopPath,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp } from './support/app-process.js';
import type { RunningRelay } from './support/relay-process.js';

/**
 * An MCP server's requests for its client (sampling, form elicitation, roots) made during a
 * tool call, through the built relay and the built agent, to the official 1.x SDK client's
 * handlers: intact both ways, refused with an error (never guessed) when several sessions are
 * in flight or the client lacks the capability, and timed out when the client never answers.
 */
const agentToken = newToken();
const clientToken = newToken();
const ANSWER_TIMEOUT_SECONDS = 2;
const FIXTURE = resolve(import.meta.dirname, 'fixtures/mcp-client-requests-server.mjs');

let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;
const open: Client[] = [];

beforeAll(async () => {
  ({ tlsFetch, relay, app } = await startShopPath(
    { asker: { command: process.execPath, args: [FIXTURE] } },
    agentToken,
    clientToken,
    { app: { SERVICE_MCP_CLIENT_TIMEOUT_SECONDS: String(ANSWER_TIMEOUT_SECONDS) } },
  ));
});

beforeEach(() => untilShopServersUp(relay, ['asker']));

afterAll(async () => {
  await Promise.all(open.map((client) => client.close().catch(() => undefined)));
  await stopShopPath({ app, relay });
});

/** The 1.x SDK client through the relay, declaring `capabilities`; handlers added after. */
async function connect(capabilities: ClientCapabilities): Promise<Client> {
  const client = new Client({ name: 'asked', version: '1.0.0' }, { capabilities });
  const url = new URL(`https://localhost:${relay.port}/mcp/shop/asker`);
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: tlsFetch,
    requestInit: { headers: { Authorization: `Bearer ${clientToken}` } },
  });
  await client.connect(transport);
  open.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = await client.callTool({ name, arguments: args });
  const text = firstText(result as { content?: unknown });
  return { isError: result.isError === true, body: JSON.parse(text) as unknown };
}

type InputRequired = {
  resultType: string;
  requestState: string;
  inputRequests: Record<string, { method: string }>;
};

const clientRequests = (outcome: string) =>
  metric(
    app.metricsUrl,
    `agent_mcp_client_requests_total{server="asker",outcome="${outcome}"}`,
  ).then((value) => value ?? 0);

/** A raw 2026-07-28 `tools/call` of ask_sampling, with `params` added (MRTR's members). */
const post2026 = (params: Record<string, unknown>, path = 'shop/asker', tool = 'ask_sampling') =>
  tlsFetch(`https://localhost:${relay.port}/mcp/${path}`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${clientToken}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': tool,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: tool,
        arguments: { prompt: 'p' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { sampling: {} },
        },
        ...params,
      },
    }),
  }).then(async (r) => ({
    status: r.status,
    ...((await r.json()) as { result?: InputRequired; error?: { code: number; data?: unknown } }),
  }));

const SAMPLED = { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' };

describe('server-to-client requests through agent and relay (e2e)', () => {
  it("passes sampling to the client's handler and its answer back to the server", async () => {
    const client = await connect({ sampling: {} });
    const seen: unknown[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      seen.push(request.params);
      return {
        role: 'assistant',
        content: { type: 'text', text: 'a fern' },
        model: 'test-model',
        stopReason: 'endTurn',
      };
    });
    const before = await clientRequests('answered');
    const answer = await call(client, 'ask_sampling', { prompt: 'name a plant ✓' });
    expect(seen).toEqual([
      expect.objectContaining({
        messages: [{ role: 'user', content: { type: 'text', text: 'name a plant ✓' } }],
        maxTokens: 64,
      }),
    ]);
    expect(answer).toEqual({
      isError: false,
      body: {
        role: 'assistant',
        content: { type: 'text', text: 'a fern' },
        model: 'test-model',
        stopReason: 'endTurn',
      },
    });
    expect(await clientRequests('answered')).toBe(before + 1);
  });

  it('passes a form elicitation with its schema intact, and roots/list', async () => {
    const client = await connect({ elicitation: { form: {} }, roots: {} });
    const seen: unknown[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      seen.push(request.params);
      return { action: 'accept', content: { name: 'Grace', color: 'red', count: 4 } };
    });
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: 'file:///srv/garden', name: 'garden' }],
    }));
    const form = await call(client, 'ask_elicitation', { message: 'Who waters?' });
    expect(seen).toEqual([
      {
        mode: 'form',
        message: 'Who waters?',
        requestedSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', title: 'Name', default: 'Ada' },
            color: { type: 'string', enum: ['red', 'green'], default: 'green' },
            count: { type: 'integer', minimum: 1, maximum: 9, default: 3 },
          },
          required: ['name'],
        },
      },
    ]);
    expect(form).toEqual({
      isError: false,
      body: { action: 'accept', content: { name: 'Grace', color: 'red', count: 4 } },
    });
    expect(await call(client, 'ask_roots')).toEqual({
      isError: false,
      body: { roots: [{ uri: 'file:///srv/garden', name: 'garden' }] },
    });
  });

  it('answers the server with an error when the client did not declare the capability', async () => {
    const client = await connect({ roots: {} });
    const started = Date.now();
    const result = await client.callTool({ name: 'ask_sampling', arguments: { prompt: 'hi' } });
    expect(JSON.parse(firstText(result as { content?: unknown }))).toEqual({
      code: -32601,
      message: expect.stringContaining('sampling capability') as unknown,
    });
    expect(result.isError).toBe(true);
    expect(result._meta).toEqual({ 'io.plantstore/missingClientCapabilities': { sampling: {} } });
    expect(Date.now() - started).toBeLessThan(ANSWER_TIMEOUT_SECONDS * 1000);
  });

  it('answers a 2026 client -32021 (400) when its server needed an undeclared capability', async () => {
    const before = await clientRequests('no_capability');
    const answer = await post2026({
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { roots: {} },
      },
    });
    expect(answer.status).toBe(400);
    expect(answer.error).toEqual({
      code: -32021,
      message: expect.stringContaining('capabilities') as unknown,
      data: { requiredCapabilities: { sampling: {} } },
    });
    expect(await clientRequests('no_capability')).toBe(before + 1);
  });

  it('answers the server with a timeout error when the client never answers', async () => {
    const client = await connect({ sampling: {} });
    client.setRequestHandler(CreateMessageRequestSchema, () => new Promise<never>(() => {}));
    const before = await clientRequests('timeout');
    const answer = await call(client, 'ask_sampling', { prompt: 'hi' });
    expect(answer).toEqual({
      isError: true,
      body: {
        code: -32003,
        message: `the client did not answer within ${ANSWER_TIMEOUT_SECONDS * 1000} ms`,
      },
    });
    expect(await clientRequests('timeout')).toBe(before + 1);
  });

  it("turns a server's sampling into input_required rounds for a 2026 client (MRTR)", async () => {
    const client = new ModernClient(
      { name: 'modern', version: '1.0.0' },
      { capabilities: { sampling: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    const prompts: unknown[] = [];
    client.setRequestHandler('sampling/createMessage', (request) => {
      prompts.push(request.params.messages);
      return { role: 'assistant', content: { type: 'text', text: 'a moss' }, model: 'm' };
    });
    const url = new URL(`https://localhost:${relay.port}/mcp/shop/asker`);
    const headers = { Authorization: `Bearer ${clientToken}` };
    await client.connect(new ModernTransport(url, { fetch: tlsFetch, requestInit: { headers } }));
    try {
      const result = await client.callTool({
        name: 'ask_sampling',
        arguments: { prompt: 'moss?' },
      });
      expect(prompts).toEqual([[{ role: 'user', content: { type: 'text', text: 'moss?' } }]]);
      expect(JSON.parse(firstText(result))).toMatchObject({ content: { text: 'a moss' } });
    } finally {
      await client.close();
    }
  });

  it('refuses a forged, altered or reused requestState with -32602', async () => {
    const first = await post2026({});
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const { requestState, inputRequests } = first.result!;
    const key = Object.keys(inputRequests)[0]!;
    expect(inputRequests[key]).toMatchObject({ method: 'sampling/createMessage' });
    const answer = { [key]: SAMPLED };
    for (const state of ['forged', `${requestState}-TAMPERED`]) {
      expect((await post2026({ requestState: state, inputResponses: answer })).error?.code).toBe(
        -32602,
      );
    }
    const done = await post2026({ requestState, inputResponses: answer });
    expect(done.result).toMatchObject({ resultType: 'complete' });
    expect(JSON.parse(firstText(done.result as never))).toMatchObject({ model: 'm' });
    expect((await post2026({ requestState, inputResponses: answer })).error?.code).toBe(-32602);
  });

  it('gives a 2026 client MRTR on the aggregate endpoint too', async () => {
    const first = await post2026({}, 'shop', 'asker__ask_sampling');
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const { requestState, inputRequests } = first.result!;
    const key = Object.keys(inputRequests)[0]!;
    const retry = { requestState, inputResponses: { [key]: SAMPLED } };
    const done = await post2026(retry, 'shop', 'asker__ask_sampling');
    expect(done.result).toMatchObject({ resultType: 'complete' });
    expect(JSON.parse(firstText(done.result as never))).toMatchObject({ model: 'm' });
  });

  it('ends an abandoned MRTR call: the server gets a timeout, its slot is freed', async () => {
    const before = await clientRequests('timeout');
    const { requestState, inputRequests } = (await post2026({})).result!;
    await waitFor(
      async () => (await clientRequests('timeout')) === before + 1,
      'the agent answered the server with a timeout',
    );
    const inFlight = () => metric(relay.metricsUrl, 'relay_mcp_requests_in_flight{agent="shop"}');
    await waitFor(async () => (await inFlight()) === 0, 'the held call ended');
    const answer = { [Object.keys(inputRequests)[0]!]: SAMPLED };
    expect((await post2026({ requestState, inputResponses: answer })).error?.code).toBe(-32602);
  });

  it.each([2, 3])(
    'refuses, and counts, a request while %i sessions have calls in flight',
    async (sessions) => {
      const holders = await Promise.all(
        Array.from({ length: sessions - 1 }, () => connect({ sampling: {} })),
      );
      const asker = await connect({ sampling: {} });
      let asked = 0;
      for (const client of [...holders, asker]) {
        client.setRequestHandler(CreateMessageRequestSchema, () => {
          asked++;
          return { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' };
        });
      }
      const held = holders.map((holder) => holder.callTool({ name: 'hold', arguments: {} }));
      await waitFor(
        async () => (await call(asker, 'holding')).body === holders.length,
        'the hold calls to reach the server',
      );
      const before = await clientRequests('ambiguous');
      const answer = await call(asker, 'ask_sampling', { prompt: 'whose?' });
      expect(answer).toEqual({
        isError: true,
        body: { code: -32006, message: expect.stringContaining('several clients') as unknown },
      });
      expect(asked).toBe(0);
      expect(await clientRequests('ambiguous')).toBe(before + 1);
      await asker.callTool({ name: 'release', arguments: {} });
      for (const result of await Promise.all(held)) {
        expect(firstText(result as { content?: unknown })).toBe('released');
      }
    },
  );
});
