import { type IncomingMessage, request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { answerIn } from './support/mcp-answer.js';
import { newToken } from './support/app-process.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';

/**
 * Backpressure at the built relay server: an agent pod that stops reading its WebSocket must
 * not make the relay buffer what clients send it without bound. Past one frame limit of unsent
 * bytes the relay refuses new requests and notifications for that connection (429, -32005);
 * notifications hold an in-flight slot until they are written, so the per-client cap counts them.
 */
const MAX_FRAME_BYTES = 256 * 1024;
const labToken = newToken();
const aliceToken = newToken();

interface Frame {
  type: string;
  server: string;
  message: { id?: number; method?: string };
}

/** An agent pod that answers while it reads, and can stop reading its socket (`pause`). */
class StallingAgent {
  readonly calls: Frame['message'][] = [];
  readonly ws: WebSocket;
  readonly open: Promise<void>;

  constructor(url: string) {
    this.ws = new WebSocket(url, { headers: { Authorization: `Bearer ${labToken}` } });
    this.open = new Promise((resolve, reject) => {
      this.ws.once('error', reject);
      this.ws.once('open', () => {
        this.ws.send(
          JSON.stringify({
            type: 'hello',
            agent: { id: 'stalling', version: '0.0.0' },
            servers: [{ name: 'slow', state: 'up', tools: [] }],
          }),
        );
        resolve();
      });
    });
    this.ws.on('message', (data) => {
      const frame = JSON.parse((data as Buffer).toString('utf8')) as Frame;
      if (frame.type !== 'rpc') return;
      this.calls.push(frame.message);
      if (frame.message.id === undefined) return;
      const result =
        frame.message.method === 'initialize'
          ? {
              protocolVersion: '2025-11-25',
              capabilities: {},
              serverInfo: { name: 'stalling', version: '0.0.0' },
            }
          : { content: [{ type: 'text', text: 'answered' }] };
      this.ws.send(
        JSON.stringify({
          type: 'rpc',
          server: frame.server,
          message: { jsonrpc: '2.0', id: frame.message.id, result },
        }),
      );
    });
  }

  notifications(method: string): number {
    return this.calls.filter((c) => c.method === method).length;
  }
}

let relay: RunningRelay | undefined;
let agent: StallingAgent | undefined;

afterEach(async () => {
  agent?.ws.terminate();
  await relay?.stop();
});

async function start(perClient: number): Promise<{
  post: (
    body: unknown,
    session?: string,
  ) => Promise<{
    status: number;
    json: Record<string, unknown>;
    session: string | null;
    retryAfter: string | null;
  }>;
  session: string;
}> {
  relay = await startRelay({
    env: {
      RELAY_AGENTS: JSON.stringify({ lab: sha256Entry(labToken) }),
      RELAY_CLIENTS: JSON.stringify({
        alice: { tokens: sha256Entry(aliceToken), agents: ['lab'] },
      }),
      RELAY_MAX_FRAME_BYTES: String(MAX_FRAME_BYTES),
      RELAY_MAX_IN_FLIGHT_PER_CLIENT: String(perClient),
      RELAY_MAX_IN_FLIGHT_PER_AGENT: '10000',
      // A pod that does not read does not answer pings either: keep it connected for the test.
      RELAY_AGENT_PING_SECONDS: '3600',
    },
  });
  const running = relay;
  agent = new StallingAgent(`ws://127.0.0.1:${running.port}/agent/v1/connect`);
  await agent.open;
  const post = async (body: unknown, session?: string) => {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${aliceToken}`,
    };
    if (session) headers['Mcp-Session-Id'] = session;
    const response = await fetch(`http://127.0.0.1:${running.port}/mcp/lab/slow`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    const text = await response.text();
    return {
      status: response.status,
      json: answerIn(text, response.headers.get('content-type')) ?? {},
      session: response.headers.get('mcp-session-id'),
      retryAfter: response.headers.get('retry-after'),
    };
  };
  const init = await waitFor(async () => {
    const answer = await post({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 't', version: '1' },
      },
    });
    return answer.session ?? undefined;
  }, 'a session on the stalling agent');
  return { post, session: init };
}

const note = (padding: number) => ({
  jsonrpc: '2.0',
  method: 'notifications/padding',
  params: { padding: 'x'.repeat(padding) },
});

/** Posts notifications until one is refused; returns how many were accepted and the refusal. */
async function flood(
  post: Awaited<ReturnType<typeof start>>['post'],
  session: string,
  padding: number,
) {
  let accepted = 0;
  // 2,000 x 100-200 KB is 200-400 MB: far past any socket buffer, so a relay without a
  // bound accepts them all and the test fails; with one, the refusal comes after a few MB.
  for (let i = 0; i < 2000; i++) {
    const answer = await post(note(padding), session);
    if (answer.status !== 202) return { accepted, refusal: answer };
    accepted++;
  }
  return { accepted, refusal: undefined };
}

describe('relay server backpressure from an agent that does not read (e2e)', () => {
  it('refuses requests and notifications past one frame limit of unsent bytes (429), and recovers', async () => {
    const { post, session } = await start(10_000);
    agent!.ws.pause(); // the pod stops reading its socket
    const { accepted, refusal } = await flood(post, session, 200_000);
    expect(refusal).toBeDefined();
    // Precondition: the pod really stopped reading, so what was accepted is buffered somewhere.
    expect(agent!.notifications('notifications/padding')).toBeLessThan(accepted);
    expect(refusal?.status).toBe(429);
    expect(refusal?.retryAfter).toBe('1');
    expect(refusal?.json).toMatchObject({
      error: { code: -32005, message: expect.stringContaining('is not reading') as unknown },
    });
    const request = await post({ jsonrpc: '2.0', id: 'r1', method: 'tools/call' }, session);
    expect(request.status).toBe(429);
    expect(request.json).toMatchObject({
      id: 'r1',
      error: { code: -32005, message: expect.stringContaining('is not reading') as unknown },
    });
    expect(
      await metric(relay!.metricsUrl, 'relay_mcp_requests_total{agent="lab",outcome="overloaded"}'),
    ).toBeGreaterThanOrEqual(2);

    // The pod reads again: everything accepted arrives, nothing refused does, and it is served.
    agent!.ws.resume();
    await waitFor(
      () => agent!.notifications('notifications/padding') === accepted,
      'the accepted notifications at the agent',
    );
    const later = await waitFor(async () => {
      const answer = await post({ jsonrpc: '2.0', id: 'r2', method: 'tools/call' }, session);
      return answer.status === 200 ? answer : undefined;
    }, 'a request served once the pod reads');
    expect(later.json).toMatchObject({ id: 'r2', result: { content: [{ text: 'answered' }] } });
    expect(agent!.notifications('notifications/padding')).toBe(accepted);
  });

  it('counts notifications not yet written in the per-client in-flight cap', async () => {
    const { post, session } = await start(2);
    agent!.ws.pause();
    // 100 KB each: two unwritten ones stay under the frame limit of unsent bytes (256 KiB), so
    // only the in-flight cap can refuse the third.
    const { accepted, refusal } = await flood(post, session, 100_000);
    expect(refusal).toBeDefined();
    expect(agent!.notifications('notifications/padding')).toBeLessThan(accepted);
    expect(refusal?.status).toBe(429);
    expect(refusal?.json).toMatchObject({
      error: {
        code: -32005,
        message: 'too many requests in flight for this client; retry later',
      },
    });
    agent!.ws.resume();
    await waitFor(
      () => agent!.notifications('notifications/padding') === accepted,
      'the accepted notifications at the agent',
    );
    // Written, they no longer count: the client is served again.
    await waitFor(
      async () => (await post(note(10), session)).status === 202,
      'a notification accepted once the others are written',
    );
  });
});

describe('relay server and a client that does not read its event stream (e2e)', () => {
  it("closes a session's GET stream that would hold more than the frame limit", async () => {
    const { post, session } = await start(10_000);
    // The session asks for the server's logging: the only client of the server gets it.
    const level = await post(
      { jsonrpc: '2.0', id: 'level', method: 'logging/setLevel', params: { level: 'debug' } },
      session,
    );
    expect(level.status).toBe(200);
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(
        `http://127.0.0.1:${relay!.port}/mcp/lab/slow`,
        {
          headers: {
            Accept: 'text/event-stream',
            Authorization: `Bearer ${aliceToken}`,
            'Mcp-Session-Id': session,
          },
        },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
    expect(response.statusCode).toBe(200);
    response.pause(); // the client stops reading
    let ended = false;
    response.on('close', () => (ended = true));
    response.on('error', () => undefined);
    const closed = () =>
      metric(relay!.metricsUrl, 'relay_event_streams_closed_total{agent="lab",budget="stream"}');
    expect((await closed()) ?? 0).toBe(0);
    for (let i = 0; i < 1000; i++) {
      agent!.ws.send(
        JSON.stringify({
          type: 'rpc',
          server: 'slow',
          message: {
            jsonrpc: '2.0',
            method: 'notifications/message',
            params: { level: 'info', data: `${i} ${'x'.repeat(10_000)}` },
          },
        }),
      );
    }
    // 1,000 x 10 KB is 10 MB, far past the 256 KiB limit and the socket buffers: the stream
    // is closed (its client learns it missed events) and what it held is freed.
    await waitFor(async () => ((await closed()) ?? 0) === 1, 'the unread stream closed');
    // Once it reads again, the client gets what was sent before, then the end.
    response.resume();
    await waitFor(() => ended, 'the client sees its stream end');
    // The relay still serves the session.
    const answer = await post({ jsonrpc: '2.0', id: 'after', method: 'tools/call' }, session);
    expect(answer.json).toMatchObject({ id: 'after', result: { content: [{ text: 'answered' }] } });
  });
});
