import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  firstText,
  startShopPath,
  stopShopPath,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp } from './support/app-process.js';
import { type RunningRelay, sha256Entry } from './support/relay-process.js';

/**
 * A server with `"instances": "per-client"` behind the built agent and relay: each client (a
 * RELAY_CLIENTS name) gets a process of its own, so its server's sampling requests reach it and
 * never another client, even while both call at once; a client that never answers delays
 * nobody; past maxInstances a further client is refused; an idle process is stopped.
 */
const agentToken = newToken();
const tokens = { alice: newToken(), bob: newToken(), carol: newToken() };
const IDLE_SECONDS = 15;
const FIXTURE = resolve(import.meta.dirname, 'fixtures/mcp-client-requests-server.mjs');

let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;
const open: Client[] = [];

beforeAll(async () => {
  const clients = Object.fromEntries(
    Object.entries(tokens).map(([name, token]) => [
      name,
      { tokens: sha256Entry(token), agents: ['shop'] },
    ]),
  );
  const mine = {
    command: process.execPath,
    args: [FIXTURE],
    instances: 'per-client' as const,
    maxInstances: 2,
    instanceIdleSeconds: IDLE_SECONDS,
  };
  ({ tlsFetch, relay, app } = await startShopPath({ mine }, agentToken, tokens.alice, {
    relay: { RELAY_CLIENTS: JSON.stringify(clients) },
    app: { SERVICE_MCP_CLIENT_TIMEOUT_SECONDS: '3' },
  }));
  await untilShopServersUp(relay, ['mine']);
});

afterAll(async () => {
  await Promise.all(open.map((client) => client.close().catch(() => undefined)));
  await stopShopPath({ app, relay });
});

/** `name`'s 1.x SDK client on `mine`, whose sampling handler records the prompts it gets. */
async function connect(name: keyof typeof tokens, answer = true) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { sampling: {} } });
  const transport = new StreamableHTTPClientTransport(
    new URL(`https://localhost:${relay.port}/mcp/shop/mine`),
    { fetch: tlsFetch, requestInit: { headers: { Authorization: `Bearer ${tokens[name]}` } } },
  );
  await client.connect(transport);
  open.push(client);
  const prompts: string[] = [];
  client.setRequestHandler(CreateMessageRequestSchema, (request) => {
    const content = request.params.messages[0]?.content;
    prompts.push(content && 'text' in content ? content.text : '?');
    if (!answer) return new Promise<never>(() => {});
    return { role: 'assistant', content: { type: 'text', text: `${name}'s` }, model: 'm' };
  });
  return { client, prompts };
}

async function ask(client: Client, prompt: string) {
  const result = await client.callTool({ name: 'ask_sampling', arguments: { prompt } });
  return JSON.parse(firstText(result as { content?: unknown })) as unknown;
}

const instances = () =>
  metric(app.metricsUrl, 'mcp_server_instances{server="mine"}').then((value) => value ?? 0);

describe('per-client MCP server processes through agent and relay (e2e)', () => {
  it('gives each client its own process: both asking at once get only their own prompt', async () => {
    const alice = await connect('alice');
    const bob = await connect('bob');
    const answers = await Promise.all([ask(alice.client, 'for alice'), ask(bob.client, 'for bob')]);
    expect(alice.prompts).toEqual(['for alice']);
    expect(bob.prompts).toEqual(['for bob']);
    expect(answers).toEqual([
      expect.objectContaining({ content: { type: 'text', text: "alice's" } }),
      expect.objectContaining({ content: { type: 'text', text: "bob's" } }),
    ]);
    expect(await instances()).toBe(2);

    // A call held in alice's process is not in bob's: they are two processes.
    const held = alice.client.callTool({ name: 'hold', arguments: {} });
    const holding = (client: Client) =>
      client.callTool({ name: 'holding', arguments: {} }).then((r) => firstText(r as never));
    await waitFor(async () => (await holding(alice.client)) === '1', 'the hold call in flight');
    expect(await holding(bob.client)).toBe('0');
    expect(await ask(bob.client, 'bob again')).toMatchObject({ model: 'm' });
    await alice.client.callTool({ name: 'release', arguments: {} });
    expect(firstText((await held) as never)).toBe('released');
  });

  it('lets a client that never answers delay nobody else', async () => {
    const silent = await connect('alice', false);
    const bob = await connect('bob');
    const waiting = ask(silent.client, 'never answered');
    await waitFor(() => silent.prompts.length === 1, 'the silent client asked');
    const started = Date.now();
    expect(await ask(bob.client, 'quick')).toMatchObject({ model: 'm' });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await waiting).toMatchObject({ code: -32003 });
  });

  it('refuses a further client past maxInstances, counted, then stops idle processes', async () => {
    const carol = await connect('carol');
    await expect(ask(carol.client, 'hello')).rejects.toThrow(/already runs 2/);
    expect(carol.prompts).toEqual([]);
    const refused = 'mcp_server_instances_refused_total{server="mine",reason="max_instances"}';
    expect(await metric(app.metricsUrl, refused)).toBe(1);

    await waitFor(async () => (await instances()) === 0, 'idle processes stopped', 40_000);
    expect(await ask(carol.client, 'now')).toMatchObject({ model: 'm' });
    expect(carol.prompts).toEqual(['now']);
  }, 60_000);
});
