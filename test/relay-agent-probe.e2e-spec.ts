import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { agentServersUp } from './fixtures/relay-e2e-support.js';
import { ScriptedAgent } from './fixtures/relay-server/scripted-agent.js';
import { newToken } from './support/app-process.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';

/**
 * An agent connection that froze (SIGSTOP of its pod: the socket stays open, nothing answers,
 * not even pings) is dropped within RELAY_AGENT_PROBE_TIMEOUT_SECONDS of the first request that
 * timed out on it, not at the next scheduled ping (here an hour away).
 */
const agentToken = newToken();
const clientToken = newToken();
let relay: RunningRelay;

beforeAll(async () => {
  relay = await startRelay({
    env: {
      RELAY_AGENTS: JSON.stringify({ lab: sha256Entry(agentToken) }),
      RELAY_CLIENTS: JSON.stringify({
        alice: { tokens: sha256Entry(clientToken), agents: ['lab'] },
      }),
      RELAY_REQUEST_TIMEOUT_SECONDS: '1',
      RELAY_AGENT_PROBE_TIMEOUT_SECONDS: '1',
      RELAY_AGENT_PING_SECONDS: '3600',
    },
  });
});

afterAll(() => relay?.stop());

const post = (body: unknown) =>
  fetch(`http://127.0.0.1:${relay.port}/mcp/lab/slow`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${clientToken}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': '2025-11-25',
    },
    body: JSON.stringify(body),
  });

describe('a frozen agent connection (e2e)', () => {
  it('is pinged after a request timed out on it, and dropped without a pong', async () => {
    const frozen = new ScriptedAgent(
      `ws://127.0.0.1:${relay.port}/agent/v1/connect`,
      agentToken,
      '',
      ['slow'],
      false,
    );
    await frozen.connect();
    // connect() resolves once hello is sent; the relay routes to the agent once it has read it.
    await waitFor(
      async () => (await agentServersUp(relay, 'lab')).includes('slow'),
      'the frozen agent registered',
    );
    const noPong = () => metric(relay.metricsUrl, 'relay_agent_rejections_total{reason="no_pong"}');
    const before = (await noPong()) ?? 0;
    // The frozen pod answers initialize (scripted) but never the call.
    const opened = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
    const sessionId = opened.headers.get('mcp-session-id');
    expect(sessionId).toBeTruthy();
    const started = Date.now();
    const call = await fetch(`http://127.0.0.1:${relay.port}/mcp/lab/slow`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${clientToken}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': sessionId ?? '',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'x' } }),
    });
    expect(await call.json()).toMatchObject({ id: 2, error: { code: -32003 } });
    await waitFor(async () => ((await noPong()) ?? 0) > before, 'the frozen connection dropped');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await frozen.closed).toBeGreaterThan(0);
  });
});
