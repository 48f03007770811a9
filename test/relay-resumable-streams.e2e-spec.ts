import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  connectMcp,
  firstText,
  type McpConnection,
  relayFixtureServer,
  type ShopPath,
  startShopPath,
  stopShopPath,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken } from './support/app-process.js';
import { answerIn } from './support/mcp-answer.js';
import { TcpProxy } from './support/tcp-proxy.js';

/**
 * Resumable event streams of MCP 2025-11-25 sessions (Streamable HTTP's "Resumability and
 * Redelivery") through the built relay and the built agent: a `tools/call` answers on an event
 * stream that opens with a priming event (an id and `retry`); a client whose connection breaks
 * resumes it with a GET and `Last-Event-ID` and gets what it missed, while the call goes on.
 * The official SDK client does that by itself, through a TCP proxy the test cuts.
 */
const agentToken = newToken();
const clientToken = newToken();
/** Room for the `hold` call's last progress event and answer, not its first one too. */
const REPLAY_BYTES = 350;

let path: ShopPath;
let proxy: TcpProxy;
let releaser: McpConnection;

beforeAll(async () => {
  path = await startShopPath({ fixture: relayFixtureServer() }, agentToken, clientToken, {
    relay: { RELAY_STREAM_REPLAY_BYTES: String(REPLAY_BYTES) },
  });
  await untilShopServersUp(path.relay, ['fixture']);
  proxy = new TcpProxy({ host: '127.0.0.1', port: path.relay.port });
  await proxy.start();
  releaser = await connectMcp(url(path.relay.port), clientToken, path.tlsFetch);
}, 120_000);

afterAll(async () => {
  await releaser?.close();
  await proxy?.stop();
  await stopShopPath(path ?? {});
});

const url = (port: number) => `https://localhost:${port}/mcp/shop/fixture`;
const relayMetric = async (series: string) => (await metric(path.relay.metricsUrl, series)) ?? 0;
/** Ends the fixture's `hold` calls, then waits until the relay has their answers. */
async function release(): Promise<void> {
  await releaser.client.callTool({ name: 'release', arguments: {} });
  await waitFor(
    async () => (await relayMetric('relay_mcp_requests_in_flight{agent="shop"}')) === 0,
    'the held call answered at the relay',
  );
}

describe('resumable event streams of 2025-11-25 sessions (e2e)', () => {
  it('lets the SDK client resume a call whose connection broke, honouring retry', async () => {
    const resumedFrom: string[] = [];
    const delays: number[] = [];
    // The test decides when the client reconnects: once the call's answer is at the relay.
    let released = false;
    const waiting: (() => void)[] = [];
    const client = new Client({ name: 'resuming', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url(proxy.port)), {
      fetch: (input, init) => {
        const lastEventId = new Headers(init?.headers).get('last-event-id');
        if (lastEventId !== null) resumedFrom.push(lastEventId);
        return path.tlsFetch(input, init);
      },
      requestInit: { headers: { Authorization: `Bearer ${clientToken}` } },
      reconnectionScheduler: (reconnect, delay) => {
        delays.push(delay);
        if (released) reconnect();
        else waiting.push(reconnect);
      },
    });
    await client.connect(transport);
    try {
      const progress: string[] = [];
      const call = client.callTool(
        { name: 'hold', arguments: { seconds: 60 } },
        { onprogress: (p) => progress.push(p.message ?? '') },
      );
      await waitFor(() => progress.length === 1, 'the first progress event');
      proxy.moveTo({ host: '127.0.0.1', port: path.relay.port }, { cut: true });
      await waitFor(() => waiting.length > 0, 'the client to schedule a reconnect');
      await release();
      released = true;
      for (const reconnect of waiting.splice(0)) reconnect();
      expect(firstText(await call)).toBe('held');
      expect(progress).toEqual(['holding', 'released']);
      // The call's stream from its first progress event (its GET stream may resume too).
      expect(resumedFrom).toContainEqual(expect.stringMatching(/^[\w-]{8}\.\d+\.[\w-]+\.1$/));
      expect(new Set(delays)).toEqual(new Set([1000]));
    } finally {
      await client.close();
    }
  });

  it('replays what it kept after the id given, within RELAY_STREAM_REPLAY_BYTES, and only once', async () => {
    const session = await initialize('2025-11-25');
    const posted = new AbortController();
    const answer = await post(session, holdCall, posted.signal);
    expect(answer.headers.get('content-type')).toBe('text/event-stream');
    const reader = answer.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('holding')) text += (await reader.read()).value ?? '';
    const [, key] = /^id: ([\w-]{8}\.\d+\.[\w-]+)\.0\nretry: 1000\ndata: \n\n/.exec(text) ?? [];
    expect(key, text).toBeDefined();
    posted.abort();
    const dropped = 'relay_replay_dropped_total{agent="shop",reason="bound"}';
    const refused = 'relay_replay_dropped_total{agent="shop",reason="resume"}';
    const [droppedBefore, refusedBefore] = [await relayMetric(dropped), await relayMetric(refused)];
    await release();

    // Another session's client gets nothing of this stream: its request answered, as lost.
    const other = await resume(await initialize('2025-11-25'), `${key}.0`);
    expect(answerIn(await other.text(), other.headers.get('content-type'))).toMatchObject({
      id: 7,
      error: { code: -32001 },
    });

    const resumed = await resume(session, `${key}.0`);
    expect(resumed.status).toBe(200);
    // `holding` (event 1) no longer fits beside `released`: only what followed it is replayed.
    const events = [
      ...(await resumed.text()).matchAll(/^id: (\S+)\nevent: message\ndata: (.*)$/gm),
    ];
    expect(events.map(([, id]) => id)).toEqual([`${key}.2`, `${key}.3`]);
    expect(JSON.parse(events[1]![2]!)).toMatchObject({
      id: 7,
      result: { content: [{ text: 'held' }] },
    });
    expect(await relayMetric(dropped)).toBe(droppedBefore + 1);
    // Delivered, the stream is gone: resuming it answers the call with an error, never a wait.
    const again = await resume(session, `${key}.2`);
    expect(answerIn(await again.text(), again.headers.get('content-type'))).toMatchObject({
      id: 7,
      error: { code: -32001 },
    });
    // The other session's, the one that missed `holding`, and this one.
    expect(await relayMetric(refused)).toBe(refusedBefore + 3);
  });

  it('stops a 1.x SDK client resuming a call answered with an error, keeping its GET stream', async () => {
    // SDK 1.x counts only a result as a stream's answer: after an error it resumes the stream.
    // GETs without Last-Event-ID (the GET stream), how many of them the relay ended; resumes.
    const gets = { plain: 0, ended: 0, resumes: 0 };
    const client = new ClientV1({ name: 'v1', version: '1.0.0' });
    const transport = new TransportV1(new URL(url(path.relay.port)), {
      fetch: async (input, init) => {
        const answer = await path.tlsFetch(input, init);
        if (init?.method !== 'GET') return answer;
        if (new Headers(init.headers).has('last-event-id')) {
          gets.resumes += 1;
          return answer;
        }
        gets.plain += 1;
        return answer.body ? withEnd(answer, () => (gets.ended += 1)) : answer;
      },
      requestInit: { headers: { Authorization: `Bearer ${clientToken}` } },
    });
    await client.connect(transport);
    try {
      await waitFor(() => gets.plain === 1, 'the GET stream');
      const call = client.callTool({ name: 'no-such-tool', arguments: {} });
      await expect(call).rejects.toMatchObject({ code: -32602 });
      // The client waits `retry` (1 s) before each resume: a loop shows within 3 s.
      await watch(3_000, () => {
        expect(gets).toMatchObject({ plain: 1, ended: 0 });
        expect(gets.resumes).toBeLessThanOrEqual(1);
      });
      const pid = (await client.callTool({ name: 'pid', arguments: {} })) as { content?: unknown };
      expect(firstText(pid)).toMatch(/^\d+$/);
      expect(gets).toMatchObject({ plain: 1, ended: 0 });
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });

  it('answers a session of a revision before 2025-11-25 as before: JSON, no event ids', async () => {
    const session = await initialize('2025-06-18');
    const answer = await post(session, { ...holdCall, params: { name: 'pid', arguments: {} } });
    expect(answer.headers.get('content-type')).toBe('application/json');
  });
});

/** Checks `expectations` every 50 ms for `ms`, failing at the first miss. */
async function watch(ms: number, expectations: () => void): Promise<void> {
  const end = Date.now() + ms;
  for (; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 50))) expectations();
  expectations();
}

/** `answer` with `onEnd` called once its body ends (or breaks). */
function withEnd(answer: Response, onEnd: () => void): Response {
  const body = answer.body!.pipeThrough(new TransformStream({ flush: onEnd }));
  return new Response(body, answer);
}

const holdCall = {
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name: 'hold', arguments: { seconds: 60 }, _meta: { progressToken: 'p' } },
};

/** Each session's revision, sent with its requests as MCP-Protocol-Version. */
const versions = new Map<string, string>();

function headers(session?: string): Record<string, string> {
  return {
    Authorization: `Bearer ${clientToken}`,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    ...(session && { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': versions.get(session)! }),
  };
}

/** A raw session of `version`: its id. */
async function initialize(version: string): Promise<string> {
  const answer = await post(undefined, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: version,
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    },
  });
  await answer.text();
  const session = answer.headers.get('mcp-session-id');
  if (!session) throw new Error(`no session (HTTP ${answer.status})`);
  versions.set(session, version);
  return session;
}

function post(session: string | undefined, body: unknown, signal?: AbortSignal) {
  const init = { method: 'POST', headers: headers(session), body: JSON.stringify(body), signal };
  return path.tlsFetch(url(path.relay.port), init);
}

function resume(session: string, lastEventId: string) {
  const init = { headers: { ...headers(session), 'Last-Event-ID': lastEventId } };
  return path.tlsFetch(url(path.relay.port), init);
}
