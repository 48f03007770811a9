import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  relayFixtureServer,
  startShopPath,
  stopShopPath,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp } from './support/app-process.js';
import type { RunningRelay } from './support/relay-process.js';

/**
 * JSON-RPC ids past 2^53 through the built relay (over TLS) and the built service as agent
 * `shop`: the answer carries the id exactly as the client wrote it, on the per-server and the
 * aggregate endpoint, for MCP 2025-11-25 and 2026-07-28 clients.
 */
const agentToken = newToken();
const clientToken = newToken();
const HUGE = '123456789012345678901234567890';
const HUGE_TOO = '98765432109876543210';

let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;

beforeAll(async () => {
  ({ tlsFetch, relay, app } = await startShopPath(
    { fixture: relayFixtureServer() },
    agentToken,
    clientToken,
  ));
  await untilShopServersUp(relay, ['fixture']);
});

afterAll(() => stopShopPath({ app, relay }));

/** POSTs `body` (JSON text, so ids are written as they are) to `/mcp/shop<path>`. */
async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const response = await tlsFetch(`https://localhost:${relay.port}/mcp/shop${path}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${clientToken}`,
      ...headers,
    },
    body,
  });
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    text: await response.text(),
  };
}

const initialize = (id: string) =>
  `{"jsonrpc":"2.0","id":${id},"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ids","version":"1"}}}`;

/** The id of the answer, as written on the wire (the JSON text, or the event stream's data). */
const idOnWire = (text: string) => /"id":(-?[0-9.e+]+|"[^"]*")/.exec(text)?.[1];

describe.each([
  ['per-server', '/fixture'],
  ['aggregate', ''],
])('ids past 2^53 on the %s endpoint', (_, path) => {
  it('MCP 2025-11-25: initialize and tools/list answer with the exact id', async () => {
    const opened = await post(path, initialize(HUGE));
    expect(opened.status).toBe(200);
    expect(idOnWire(opened.text)).toBe(HUGE);
    const session = {
      'Mcp-Session-Id': opened.session ?? '',
      'MCP-Protocol-Version': '2025-11-25',
    };
    await post(path, '{"jsonrpc":"2.0","method":"notifications/initialized"}', session);
    const listed = await post(
      path,
      `{"jsonrpc":"2.0","id":${HUGE_TOO},"method":"tools/list"}`,
      session,
    );
    expect(listed.status).toBe(200);
    expect(listed.text).toContain('"tools"');
    expect(idOnWire(listed.text)).toBe(HUGE_TOO);
  });

  it('MCP 2026-07-28: tools/list answers with the exact id', async () => {
    const listed = await post(
      path,
      `{"jsonrpc":"2.0","id":-${HUGE},"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
      { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' },
    );
    expect(listed.status).toBe(200);
    expect(listed.text).toContain('"tools"');
    expect(idOnWire(listed.text)).toBe(`-${HUGE}`);
  });

  it('refuses an id no number holds exactly with -32600', async () => {
    const refused = await post(path, initialize('0.1000000000000000000001'));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text)).toMatchObject({
      id: null,
      error: { code: -32600, message: expect.stringMatching(/send it as a string/) as string },
    });
  });
});
