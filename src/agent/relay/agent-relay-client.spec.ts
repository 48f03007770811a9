import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { pino } from 'pino';
import { Gauge, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { Secret } from '../../config/secret.js';
import type { McpSession } from '../mcp/mcp-server-runner.js';
import type { AgentServerView } from '../../agent-protocol/relay-protocol.js';
import type { McpSessions, SessionListener } from '../mcp/mcp-supervisor.service.js';
import {
  AgentRelayClient,
  DEFAULT_RELAY_LIMITS,
  DEFAULT_RELAY_TIMINGS,
  type RelayLimits,
  type RelayTimings,
} from './agent-relay-client.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const FAST: RelayTimings = {
  ...DEFAULT_RELAY_TIMINGS,
  pingIntervalMs: 100,
  pongTimeoutMs: 100,
  backoff: { initialMs: 50, maxMs: 300, jitterRatio: 0 },
};

/** Pings that never come within a test: a server that does not read answers none. */
const FAST_NO_PING: RelayTimings = { ...FAST, pingIntervalMs: 60_000 };

class FakeSessions implements McpSessions {
  views: AgentServerView[] = [
    { name: 'echo', state: 'up', tools: [{ name: 'echo', inputSchema: { type: 'object' } }] },
  ];
  listener: SessionListener | undefined;
  change = () => this.listener?.changed();
  /** The result the fake child answers every request with (default: the method echoed). */
  answer: Record<string, unknown> | undefined;
  relay = (server: string, message: JSONRPCMessage) => this.listener?.message(server, message);
  servers = () => this.views;
  childKey = (server: string) => server;
  openChild = () => Promise.resolve();
  session = (name: string): McpSession | undefined =>
    name === 'echo'
      ? {
          initializeResult: { protocolVersion: '2025-11-25' },
          waitingBytes: () => 0,
          send: (message) => {
            // Answer like a child would, through the supervisor's relay channel.
            if ('id' in message && 'method' in message) {
              setImmediate(() =>
                this.relay('echo', {
                  jsonrpc: '2.0',
                  id: message.id,
                  result: this.answer ?? { echoed: message.method },
                }),
              );
            }
            return Promise.resolve();
          },
        }
      : undefined;
  setListener = (listener: SessionListener | undefined) => (this.listener = listener);
}

interface TestServer {
  url: URL;
  frames: unknown[];
  requests: IncomingMessage[];
  sockets: WebSocket[];
  wss: WebSocketServer;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(
  options: { status?: number; answerPings?: boolean } = {},
): Promise<TestServer> {
  const frames: unknown[] = [];
  const requests: IncomingMessage[] = [];
  const sockets: WebSocket[] = [];
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    autoPong: options.answerPings ?? true,
    verifyClient: (info, done) => {
      requests.push(info.req);
      if (options.status) done(false, options.status);
      else done(true);
    },
  });
  await new Promise((resolve) => wss.once('listening', resolve));
  wss.on('connection', (socket) => {
    sockets.push(socket);
    socket.on('message', (data) => frames.push(JSON.parse((data as Buffer).toString())));
  });
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  );
  const { port } = wss.address() as AddressInfo;
  return {
    url: new URL(`ws://127.0.0.1:${port}/agent/v1/connect`),
    frames,
    requests,
    sockets,
    wss,
  };
}

/** A TLS server whose certificate nothing trusts, made with the openssl CLI at test time. */
async function startSelfSignedServer(): Promise<{ url: URL }> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-self-signed-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
      .concat(['-keyout', 'key.pem', '-out', 'cert.pem', '-days', '1', '-subj', '/CN=localhost'])
      .concat(['-addext', 'subjectAltName=IP:127.0.0.1']),
    { cwd: dir, stdio: 'pipe' },
  );
  const https = createHttpsServer({
    key: readFileSync(join(dir, 'key.pem')),
    cert: readFileSync(join(dir, 'cert.pem')),
  });
  await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => https.close(() => resolve())));
  const { port } = https.address() as AddressInfo;
  return { url: new URL(`wss://127.0.0.1:${port}/agent/v1/connect`) };
}

function startClient(
  url: URL,
  token = 'secret-token',
  limits?: RelayLimits,
  timings: RelayTimings = FAST,
  dropped?: (place: string, server: string, kind: string) => void,
) {
  const registry = new Registry();
  const gauge = new Gauge({ name: 'agent_server_connected', help: 'x', registers: [registry] });
  const sessions = new FakeSessions();
  const logs: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(line) });
  const client = new AgentRelayClient({
    url,
    token: new Secret(token),
    agentId: 'pod-1',
    version: '1.2.3',
    sessions,
    logger,
    connectedGauge: gauge,
    timings,
    ...(limits ? { limits } : {}),
    ...(dropped ? { dropped } : {}),
  });
  client.start();
  cleanups.push(() => client.stop());
  const connected = async () => (await gauge.get()).values[0]?.value;
  return { client, sessions, logs, connected };
}

/** Relays `count` 1 MB notifications and keeps nothing of them but weak references. */
function relayPadding(sessions: FakeSessions, count: number): WeakRef<object>[] {
  const refs: WeakRef<object>[] = [];
  for (let i = 0; i < count; i++) {
    const params = { data: 'x'.repeat(1024 * 1024 - 1) + String(i % 10) };
    refs.push(new WeakRef(params));
    sessions.relay('echo', { jsonrpc: '2.0', method: 'notifications/message', params });
  }
  return refs;
}

async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('AgentRelayClient', () => {
  it('sends the token in the header only, then hello with the inventory', async () => {
    const server = await startServer();
    const { client, connected } = startClient(server.url);
    await waitFor(() => server.frames.length > 0);
    const request = server.requests[0]!;
    expect(request.headers.authorization).toBe('Bearer secret-token');
    expect(request.headers['user-agent']).toBe('plant-store-agent/1.2.3');
    expect(request.url).toBe('/agent/v1/connect');
    expect(server.frames[0]).toEqual({
      type: 'hello',
      agent: { id: 'pod-1', version: '1.2.3' },
      servers: [
        { name: 'echo', state: 'up', tools: [{ name: 'echo', inputSchema: { type: 'object' } }] },
      ],
    });
    expect(await connected()).toBe(1);
    expect(client.status()).toMatchObject({ enabled: true, connected: true, tokenRejected: false });
    expect(JSON.stringify(client.status())).not.toContain('secret-token');
  });

  it('relays requests and answers unknown servers with -32001', async () => {
    const server = await startServer();
    startClient(server.url);
    await waitFor(() => server.frames.length > 0);
    const socket = server.sockets[0]!;
    socket.send(
      JSON.stringify({
        type: 'rpc',
        server: 'echo',
        message: { jsonrpc: '2.0', id: 41, method: 'tools/list' },
      }),
    );
    socket.send(
      JSON.stringify({
        type: 'rpc',
        server: 'ghost',
        message: { jsonrpc: '2.0', id: 42, method: 'tools/list' },
      }),
    );
    await waitFor(() => server.frames.length === 3);
    expect(server.frames).toContainEqual({
      type: 'rpc',
      server: 'echo',
      message: { jsonrpc: '2.0', id: 41, result: { echoed: 'tools/list' } },
    });
    expect(server.frames).toContainEqual({
      type: 'rpc',
      server: 'ghost',
      message: {
        jsonrpc: '2.0',
        id: 42,
        error: {
          code: -32001,
          message: 'MCP server "ghost" is not available (unknown or not running)',
        },
      },
    });
  });

  it('sends an inventory frame when a state changes, and only then', async () => {
    const server = await startServer();
    const { sessions } = startClient(server.url);
    await waitFor(() => server.frames.length > 0);
    sessions.change();
    sessions.views = [{ name: 'echo', state: 'down', tools: [] }];
    sessions.change();
    await waitFor(() => server.frames.length === 2);
    expect(server.frames[1]).toEqual({
      type: 'inventory',
      servers: [{ name: 'echo', state: 'down', tools: [] }],
    });
  });

  it.each([401, 403])(
    'reports a rejected token (HTTP %d) and backs off to the maximum',
    async (status) => {
      const server = await startServer({ status });
      const { client, logs, connected } = startClient(server.url);
      await waitFor(() => client.status().tokenRejected === true);
      expect(client.status()).toMatchObject({
        connected: false,
        lastError: `agent token rejected by server (HTTP ${status})`,
      });
      expect(logs.join('')).toContain('agent token rejected by server');
      expect(logs.join('')).not.toContain('secret-token');
      expect(await connected()).toBe(0);
      expect(logs.join('')).toContain('"retryInMs":300');
    },
  );

  it('hints once at NODE_EXTRA_CA_CERTS when the server certificate is self-signed', async () => {
    const server = await startSelfSignedServer();
    const { client, logs } = startClient(server.url);
    await waitFor(() => client.status().reconnects >= 2);
    const text = logs.join('');
    expect(text).toContain('self-signed certificate');
    expect(text.match(/NODE_EXTRA_CA_CERTS/g)).toHaveLength(1);
  });

  it('reconnects when the connection drops', async () => {
    const server = await startServer();
    const { client } = startClient(server.url);
    await waitFor(() => server.frames.length > 0);
    server.sockets[0]!.terminate();
    await waitFor(() => server.frames.length === 2);
    expect(server.frames[1]).toMatchObject({ type: 'hello' });
    expect(client.status()).toMatchObject({ connected: true, reconnects: 1 });
  });

  it('treats a connection without pongs as dead', async () => {
    const server = await startServer({ answerPings: false });
    const { client, logs } = startClient(server.url);
    await waitFor(() => server.frames.length > 0);
    await waitFor(() => client.status().reconnects >= 1);
    expect(logs.join('')).toContain('no pong within 100 ms; reconnecting');
  });

  it('logs 50,000 junk frames in a handful of lines, none whole, and keeps relaying', async () => {
    const server = await startServer();
    // Default pings: the fast test ones would time out behind 50,000 queued frames.
    const { logs, client } = startClient(
      server.url,
      'secret-token',
      undefined,
      DEFAULT_RELAY_TIMINGS,
    );
    await waitFor(() => server.frames.length > 0);
    const socket = server.sockets[0]!;
    const junk = `{"type":"junk","padding":"${'x'.repeat(1_000)}"}`;
    for (let i = 0; i < 50_000; i++) socket.send(i % 2 ? junk : 'not json');
    // A deep `type` once made the warning itself throw (JSON.stringify), outside any catch.
    socket.send(`{"type":${'['.repeat(10_000)}${']'.repeat(10_000)}}`);
    socket.send(
      JSON.stringify({
        type: 'rpc',
        server: 'echo',
        message: { jsonrpc: '2.0', id: 'after', method: 'tools/list' },
      }),
    );
    await waitFor(() => server.frames.length === 2, 20_000);
    expect(server.frames[1]).toMatchObject({ message: { id: 'after' } });
    expect(client.status().reconnects).toBe(0);
    const warnings = logs.filter((line) => line.includes('ignored a frame'));
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.length).toBeLessThanOrEqual(20);
    expect(Math.max(...logs.map((line) => line.length))).toBeLessThan(1_000);
  }, 60_000); // 50,000 real frames over a socket: seconds on a loaded machine

  it('answers a request nested 6,000 deep with -32004 instead of relaying it', async () => {
    const server = await startServer();
    startClient(server.url);
    await waitFor(() => server.frames.length > 0);
    server.sockets[0]!.send(
      `{"type":"rpc","server":"echo","message":{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"a":${'['.repeat(6_000)}${']'.repeat(6_000)}}}}`,
    );
    await waitFor(() => server.frames.length === 2);
    expect(server.frames[1]).toEqual({
      type: 'rpc',
      server: 'echo',
      message: {
        jsonrpc: '2.0',
        id: 9,
        error: { code: -32004, message: 'message rejected: nested deeper than 100 levels' },
      },
    });
  });

  it('drops an MCP notification nested 6,000 deep without throwing', async () => {
    const server = await startServer();
    const { sessions, logs } = startClient(server.url);
    await waitFor(() => server.frames.length > 0);
    let deep: unknown = 'x';
    for (let i = 0; i < 6_000; i++) deep = [deep];
    sessions.relay('echo', {
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { data: deep },
    });
    sessions.relay('echo', { jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await waitFor(() => server.frames.length === 2);
    expect(server.frames[1]).toMatchObject({
      message: { method: 'notifications/tools/list_changed' },
    });
    expect(logs.join('')).toContain('dropped a notification from an MCP server');
  });

  // Both with the server not reading and a 4 MiB send queue.
  it.each<[string, (sessions: FakeSessions, server: TestServer, dropped: string[]) => unknown]>([
    [
      'drops notifications past the send queue limit while the server does not read, counted',
      async (sessions, server, dropped) => {
        // 100 MB: far past the 4 MiB limit and whatever the kernel's socket buffers take.
        const data = 'x'.repeat(1024 * 1024);
        for (let i = 0; i < 100; i++) {
          sessions.relay('echo', {
            jsonrpc: '2.0',
            method: 'notifications/message',
            params: { data },
          });
        }
        expect(dropped.length).toBeGreaterThan(50);
        expect(new Set(dropped)).toEqual(new Set(['relay-send:echo:notification']));
        server.sockets[0]!.resume();
        const notifications = () =>
          server.frames.filter((f) => (f as { type: string }).type === 'rpc');
        await waitFor(() => notifications().length + dropped.length === 100);
      },
    ],
    [
      'keeps a notification waiting in the send queue as its encoded bytes only',
      async (sessions, _server, dropped) => {
        // Past what the kernel's buffers take and the queue's 4 MiB: some wait, the rest drop.
        const sent = relayPadding(sessions, 40);
        expect(dropped.length).toBeGreaterThan(0);
        // A WeakRef's target is held to the end of the job that made it.
        await new Promise((resolve) => setImmediate(resolve));
        gc();
        expect(sent.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
      },
    ],
  ])('%s', async (_name, check) => {
    const server = await startServer();
    const limits = { ...DEFAULT_RELAY_LIMITS, maxQueuedBytes: 4 * 1024 * 1024 };
    const dropped: string[] = [];
    const { sessions } = startClient(server.url, 'secret-token', limits, FAST_NO_PING, (...a) =>
      dropped.push(a.join(':')),
    );
    await waitFor(() => server.frames.length > 0);
    server.sockets[0]!.pause();
    await check(sessions, server, dropped);
  });

  it('closes the connection on a frame over the size limit (1009) and reconnects', async () => {
    const server = await startServer();
    const limits = { ...DEFAULT_RELAY_LIMITS, frame: { maxFrameBytes: 1_024, maxDepth: 100 } };
    const { client } = startClient(server.url, 'secret-token', limits);
    await waitFor(() => server.frames.length > 0);
    const closed = new Promise<number>((resolve) => server.sockets[0]!.on('close', resolve));
    server.sockets[0]!.send(JSON.stringify({ type: 'junk', padding: 'x'.repeat(2_000) }));
    expect(await closed).toBe(1009);
    await waitFor(
      () => server.frames.filter((f) => (f as { type: string }).type === 'hello').length === 2,
    );
    expect(client.status()).toMatchObject({ connected: true, reconnects: 1 });
  });

  it('refuses to send a frame over the size limit: the request gets -32004', async () => {
    const server = await startServer();
    const limits = { ...DEFAULT_RELAY_LIMITS, frame: { maxFrameBytes: 1_024, maxDepth: 100 } };
    const { sessions } = startClient(server.url, 'secret-token', limits);
    await waitFor(() => server.frames.length > 0);
    sessions.answer = { big: 'x'.repeat(2_000) };
    server.sockets[0]!.send(
      JSON.stringify({
        type: 'rpc',
        server: 'echo',
        message: { jsonrpc: '2.0', id: 'big', method: 'tools/call' },
      }),
    );
    await waitFor(() => server.frames.length === 2);
    expect(server.frames[1]).toMatchObject({
      message: { id: 'big', error: { code: -32004 } },
    });
    expect(JSON.stringify(server.frames[1])).toContain('over the 1024-byte frame limit');
  });

  it('catches whatever a message from an MCP server makes throw (it runs in a stdout handler)', async () => {
    const server = await startServer();
    const { sessions, logs } = startClient(server.url);
    await waitFor(() => server.frames.length > 0);
    const hostile = {
      jsonrpc: '2.0',
      method: 'notifications/message',
      get params(): never {
        throw new Error('a getter that throws');
      },
    } as unknown as JSONRPCMessage;
    expect(() => sessions.relay('echo', hostile)).not.toThrow();
    expect(logs.join('')).toContain(
      'dropped a message from an MCP server that could not be handled',
    );
  });
});
