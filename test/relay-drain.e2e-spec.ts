import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from './fixtures/mcp-e2e-support.js';
import { newToken } from './support/app-process.js';
import { openRaw, parseRawAnswer, type RawConnection } from './support/raw-http.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { initializeMessage } from './support/relay-cluster.js';

/**
 * The relay server shuts down like the plant service (common/bootstrap/run-http-app.ts): from
 * the signal on it accepts no new connections and answers `Connection: close` on the ones it
 * has, while the requests in flight finish; then it exits 0.
 */
const aliceToken = newToken();
let relay: RunningRelay | undefined;

afterAll(async () => {
  await relay?.stop('SIGKILL');
});

/** Waits for one whole answer (headers and a Content-Length body) on a raw connection. */
async function answerOn(
  connection: RawConnection,
  from = 0,
): Promise<ReturnType<typeof parseRawAnswer>> {
  const text = await waitFor(() => {
    const received = connection.received().slice(from);
    const end = received.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const length = Number(/content-length: (\d+)/i.exec(received.slice(0, end))?.[1] ?? 0);
    return received.length >= end + 4 + length ? received : undefined;
  }, 'a whole answer');
  return parseRawAnswer(text);
}

describe('relay server shutdown drain (e2e)', () => {
  it('answers Connection: close on kept-alive connections from the signal on, finishes the request in flight, exits 0', async () => {
    relay = await startRelay({
      env: {
        RELAY_AGENTS: JSON.stringify({ lab: sha256Entry(newToken()) }),
        RELAY_CLIENTS: JSON.stringify({
          alice: { tokens: sha256Entry(aliceToken), agents: ['lab'] },
        }),
      },
    });
    const probe = `GET /health HTTP/1.1\r\nHost: relay\r\n\r\n`;
    // A kept-alive connection to the health port, idle after its first answer.
    const idle = await openRaw(relay.healthUrl);
    await idle.write(probe);
    const first = await answerOn(idle);
    expect(first.status).toBe(200);
    expect(first.headers).not.toContain('connection: close');
    const seen = idle.received().length;

    // A request in flight on the public port: its body is still on its way.
    const body = JSON.stringify(initializeMessage('held'));
    const held = await openRaw(`http://127.0.0.1:${relay.port}`);
    await held.write(
      [
        'POST /mcp/lab/slow HTTP/1.1',
        'Host: relay',
        'Content-Type: application/json',
        `Authorization: Bearer ${aliceToken}`,
        `Content-Length: ${Buffer.byteLength(body)}`,
        // Node's server answers 100 Continue once it has parsed the headers: the condition
        // "the relay has the request" to wait for before the signal.
        'Expect: 100-continue',
        '',
        body.slice(0, 20),
      ].join('\r\n'),
    );
    const parsed = await waitFor(() => {
      const text = held.received();
      const end = text.indexOf('\r\n\r\n');
      return text.startsWith('HTTP/1.1 100 Continue') && end >= 0 ? end + 4 : undefined;
    }, 'the held request parsed');

    relay.child.kill('SIGTERM');
    await waitFor(() => relay!.output().includes('shutting down'), 'the shutdown begun');
    // The idle connection is still served, and told to close.
    await idle.write(probe);
    const during = await answerOn(idle, seen);
    expect(during.status).toBe(200);
    expect(during.headers).toContain('connection: close');
    await waitFor(() => idle.closed(), 'the idle connection closed after its answer');
    // The process waits for the request in flight, which is answered (no agent: -32001).
    expect(relay.child.exitCode).toBeNull();
    await held.write(body.slice(20));
    const answer = await answerOn(held, parsed);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: 'held', error: { code: -32001 } });
    expect(answer.headers).toContain('connection: close');
    expect(await relay.exited).toBe(0);
  });

  it('ends open event streams (a 2025 GET, a 2026 subscriptions/listen) at the signal, so the drain does not wait its grace period for them', async () => {
    relay = await startRelay({
      env: {
        RELAY_AGENTS: JSON.stringify({ lab: sha256Entry(newToken()) }),
        RELAY_CLIENTS: JSON.stringify({
          alice: { tokens: sha256Entry(aliceToken), agents: ['lab'] },
        }),
      },
    });
    // The aggregate endpoint's session is the relay's own: no agent is needed to open one.
    const initialize = await fetch(`http://127.0.0.1:${relay.port}/mcp/lab`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${aliceToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(initializeMessage()),
    });
    expect(initialize.status).toBe(200);
    const session = initialize.headers.get('mcp-session-id');
    expect(session).toBeTruthy();
    const stream = await openRaw(`http://127.0.0.1:${relay.port}`);
    await stream.write(
      [
        'GET /mcp/lab HTTP/1.1',
        'Host: relay',
        'Accept: text/event-stream',
        `Authorization: Bearer ${aliceToken}`,
        `Mcp-Session-Id: ${session}`,
        '',
        '',
      ].join('\r\n'),
    );
    // The precondition: the stream is open (its headers came, its body never ends by itself).
    await waitFor(
      () => /^HTTP\/1\.1 200[\s\S]*text\/event-stream/i.test(stream.received()),
      'the event stream open',
    );

    // And an MCP 2026-07-28 subscriptions/listen stream (no session; held open by the relay).
    const listenBody = JSON.stringify({
      jsonrpc: '2.0',
      id: 'listen:0',
      method: 'subscriptions/listen',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
        notifications: { toolsListChanged: true },
      },
    });
    const listen = await openRaw(`http://127.0.0.1:${relay.port}`);
    await listen.write(
      [
        'POST /mcp/lab HTTP/1.1',
        'Host: relay',
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
        `Authorization: Bearer ${aliceToken}`,
        'MCP-Protocol-Version: 2026-07-28',
        'Mcp-Method: subscriptions/listen',
        `Content-Length: ${Buffer.byteLength(listenBody)}`,
        '',
        listenBody,
      ].join('\r\n'),
    );
    await waitFor(
      () => listen.received().includes('notifications/subscriptions/acknowledged'),
      'the listen stream acknowledged',
    );

    relay.child.kill('SIGTERM');
    expect(await relay.exited).toBe(0);
    expect(stream.closed()).toBe(true);
    expect(listen.closed()).toBe(true);
    // It ended with the listen's result, as 2026-07-28 ends a subscription.
    expect(listen.received()).toContain('"id":"listen:0","result":{"resultType":"complete"');
    expect(relay.output()).toContain('shutting down');
    expect(relay.output()).not.toContain('closed their connections');
  });
});
