import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoServer } from './fixtures/mcp-e2e-support.js';
import {
  connectMcp,
  firstText,
  type ShopPath,
  startShopPath,
  stopShopPath,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, ROOT } from './support/app-process.js';

/**
 * What docs/relay-server.md says about a session the relay has ended ("Clients after a 404"),
 * with the official SDK client against the built relay and the built service as agent `shop`:
 * the client alone keeps failing with 404, and the docs' snippet, run as written, opens a new
 * session and sends the call again. The relay ends the session through DELETE from outside,
 * as it does when a session idles out or its agent connection goes.
 */
type WithSession = <T>(call: (client: Client) => Promise<T>) => Promise<T>;
type RelayClient = (
  url: string,
  token: string,
  transportOptions?: { fetch?: typeof fetch },
) => { withSession: WithSession; close(): Promise<void> | undefined };

const agentToken = newToken();
const clientToken = newToken();
let shop: ShopPath;
let snippetDir: string;

const mcpUrl = () => `https://localhost:${shop.relay.port}/mcp/shop/echo`;
const echo = (text: string) => (client: Client) =>
  client.callTool({ name: 'echo', arguments: { text } });

/** Ends a session at the relay, as its idle timeout would. */
async function endSession(sessionId: string): Promise<void> {
  const response = await shop.tlsFetch(mcpUrl(), {
    method: 'DELETE',
    headers: { Authorization: `Bearer ${clientToken}`, 'Mcp-Session-Id': sessionId },
  });
  expect(response.status).toBeLessThan(300);
}

/** The docs' snippet, written to a module beside node_modules so its import resolves. */
async function loadSnippet(): Promise<RelayClient> {
  const docs = readFileSync(join(ROOT, 'docs/relay-server.md'), 'utf8');
  const snippet = /### Clients after a 404[\s\S]*?```js\n([\s\S]*?)```/.exec(docs)?.[1];
  expect(snippet).toBeDefined();
  const file = join(snippetDir, 'relay-client.mjs');
  writeFileSync(file, snippet!);
  const module = (await import(pathToFileURL(file).href)) as { relayClient: RelayClient };
  return module.relayClient;
}

beforeAll(async () => {
  shop = await startShopPath({ echo: echoServer() }, agentToken, clientToken);
  await untilShopServersUp(shop.relay, ['echo']);
  mkdirSync(join(ROOT, 'node_modules/.cache'), { recursive: true });
  snippetDir = mkdtempSync(join(ROOT, 'node_modules/.cache/relay-snippet-'));
});

afterAll(async () => {
  if (snippetDir) rmSync(snippetDir, { recursive: true, force: true });
  await stopShopPath(shop ?? {});
});

describe('an MCP client after the relay ended its session (e2e)', () => {
  it('the SDK client alone gets 404 on every later request: it starts no new session', async () => {
    const mcp = await connectMcp(mcpUrl(), clientToken, shop.tlsFetch);
    try {
      expect(firstText(await echo('before')(mcp.client))).toBe('before');
      await endSession(mcp.transport.sessionId!);
      for (const text of ['after', 'again']) {
        await expect(echo(text)(mcp.client)).rejects.toMatchObject({ status: 404 });
      }
    } finally {
      await mcp.client.close();
    }
  });

  it("the docs' snippet opens a new session and sends the call once more", async () => {
    const relayClient = await loadSnippet();
    const sessions: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      const response = await shop.tlsFetch(input, init);
      const session = response.headers.get('mcp-session-id');
      if (session && !sessions.includes(session)) sessions.push(session);
      return response;
    };
    const relay = relayClient(mcpUrl(), clientToken, { fetch: recording });
    try {
      expect(firstText(await relay.withSession(echo('first')))).toBe('first');
      expect(sessions).toHaveLength(1);
      await endSession(sessions[0]!);
      expect(firstText(await relay.withSession(echo('second')))).toBe('second');
      expect(sessions).toHaveLength(2);
      expect(firstText(await relay.withSession(echo('third')))).toBe('third');
      expect(sessions).toHaveLength(2);
    } finally {
      await relay.close();
    }
  });
});
