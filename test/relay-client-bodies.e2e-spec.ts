import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { ScriptedAgent } from './fixtures/relay-server/scripted-agent.js';
import { newToken } from './support/app-process.js';
import { openRaw, parseRawAnswer, waitUntil } from './support/raw-http.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';

/**
 * MCP request bodies at the built relay server are read by the plant API's body reader
 * (common/http/request-body.ts) with the frame limit as its size: nesting, a minimum receive
 * rate and the charset are held to the same rules, and the relay keeps serving after each.
 */
const labToken = newToken();
const aliceToken = newToken();

let relay: RunningRelay;
let lab: ScriptedAgent;

const mcpUrl = () => `http://127.0.0.1:${relay.port}/mcp/lab/slow`;

async function post(
  body: string | Buffer,
  options: { session?: string; contentType?: string } = {},
): Promise<{ status: number; session: string | null; json: Record<string, unknown> | null }> {
  const headers: Record<string, string> = {
    'Content-Type': options.contentType ?? 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: `Bearer ${aliceToken}`,
  };
  if (options.session) headers['Mcp-Session-Id'] = options.session;
  const response = await fetch(mcpUrl(), { method: 'POST', headers, body });
  const text = await response.text();
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    json: text === '' ? null : (JSON.parse(text) as Record<string, unknown>),
  };
}

const initialize = (name = 'bodies') =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name, version: '1' } },
  });

/** The relay still opens sessions and relays to the agent: it kept serving. */
async function stillServing(): Promise<void> {
  const init = await post(initialize());
  expect(init.status).toBe(200);
  expect(init.session).toEqual(expect.any(String));
}

/** JSON text `levels` arrays deep; built as text, as JSON.stringify itself would overflow. */
const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

beforeAll(async () => {
  relay = await startRelay({
    env: {
      RELAY_AGENTS: JSON.stringify({ lab: sha256Entry(labToken) }),
      RELAY_CLIENTS: JSON.stringify({
        alice: { tokens: sha256Entry(aliceToken), agents: ['lab'] },
      }),
      RELAY_MAX_FRAME_BYTES: String(256 * 1024),
    },
  });
  lab = new ScriptedAgent(`ws://127.0.0.1:${relay.port}/agent/v1/connect`, labToken, '');
  await lab.connect();
  await waitFor(async () => {
    const health = (await (await fetch(`${relay.healthUrl}/health`)).json()) as {
      details: { agents: { agents: Record<string, { serversUp: string[] }> } };
    };
    return health.details.agents.agents.lab?.serversUp.includes('slow');
  }, 'the scripted agent greeted');
});

afterAll(async () => {
  lab?.vanish();
  await relay?.stop();
});

describe('relay server: MCP request bodies (e2e)', () => {
  it('answers a body nested past the protocol depth with 400, before any session or agent work', async () => {
    const init = await post(initialize());
    const session = init.session!;
    const callsBefore = lab.calls.length;
    // The nesting in a notification's requestId: the relay looks the id up, which used to
    // stringify it (a RangeError, a 500).
    const cancel = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${deep(20_000)}}}`;
    const refused = await post(cancel, { session });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({
      error: 400,
      message:
        'the MCP message is too deeply nested: arrays and objects may nest at most 99 levels deep',
    });
    // An initialize nested too deep opens no session and never reaches the agent.
    const deepInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":${deep(100)}}`;
    const refusedInit = await post(deepInit);
    expect(refusedInit.status).toBe(400);
    expect(refusedInit.session).toBeNull();
    expect(lab.calls.length).toBe(callsBefore);
    // Precondition of the limit: 99 levels (the frame adds the 100th) are passed on.
    const atLimit = await post(
      `{"jsonrpc":"2.0","method":"notifications/x","params":${deep(98)}}`,
      { session },
    );
    expect(atLimit.status).toBe(202);
    await waitFor(() => lab.calls.length === callsBefore + 1, 'the 99-deep message at the agent');
    await stillServing();
  });

  it('answers 408 to a body that trickles slower than 1 KiB/s after 5 s, and keeps serving', async () => {
    const connection = await openRaw(mcpUrl());
    const body = initialize();
    await connection.write(
      [
        'POST /mcp/lab/slow HTTP/1.1',
        `Host: 127.0.0.1:${relay.port}`,
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
        `Authorization: Bearer ${aliceToken}`,
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        '',
      ].join('\r\n') + body.slice(0, 10),
    );
    // The body stops after 10 bytes. Node's own request timeout (90 s) would answer much
    // later; the reader's minimum rate answers after its 5 s grace. 30 s proves no hang.
    expect(await waitUntil(() => connection.received().includes('\r\n\r\n{'), 30_000)).toBe(true);
    const answer = parseRawAnswer(connection.received());
    expect(answer.status).toBe(408);
    expect(answer.body).toMatchObject({
      error: 408,
      message: expect.stringContaining('arrived too slowly') as unknown,
    });
    expect(answer.headers).toContain('connection: close');
    connection.socket.destroy();
    await stillServing();
  });

  it('answers 415 to a body in a charset other than UTF-8, and keeps serving', async () => {
    const callsBefore = lab.calls.length;
    // "café" in Latin-1: read as UTF-8 it would reach the agent as "caf\uFFFD".
    const latin1 = Buffer.from(initialize('caf\u00e9'), 'latin1');
    const refused = await post(latin1, { contentType: 'application/json; charset=iso-8859-1' });
    expect(refused.status).toBe(415);
    expect(refused.json).toEqual({
      error: 415,
      message: 'the request body must be UTF-8 (charset=utf-8 or none)',
    });
    // Without a charset, the same bytes are not UTF-8: refused too, never replaced by U+FFFD.
    const notUtf8 = await post(latin1);
    expect(notUtf8.status).toBe(400);
    expect(notUtf8.json).toMatchObject({ message: 'the request body is not valid UTF-8' });
    expect(lab.calls.length).toBe(callsBefore);
    // Precondition: the same message as UTF-8 opens a session.
    expect((await post(initialize('caf\u00e9'))).status).toBe(200);
    expect(await metric(relay.metricsUrl, 'relay_agent_connections{agent="lab"}')).toBe(1);
  });
});
