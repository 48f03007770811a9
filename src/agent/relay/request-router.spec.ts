import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { McpSession } from '../mcp/mcp-server-runner.js';
import { DEFAULT_FRAME_LIMITS, encodeFrame } from '../../agent-protocol/frame-codec.js';
import type { RpcFrame } from '../../agent-protocol/relay-protocol.js';
import {
  type DropKind,
  type DropPlace,
  RequestRouter,
  type SendOutcome,
} from './request-router.js';

/** Every server here is shared: a request goes to the server's one child. */
const SHARED_ONLY = {
  childKey: (server: string) => server,
  openChild: () => Promise.resolve(),
};

const INIT_RESULT = {
  protocolVersion: '2025-11-25',
  capabilities: { tools: {} },
  serverInfo: { name: 'echo', version: '1' },
};

function setup(maxInFlight = 1_000) {
  const toChild: JSONRPCMessage[] = [];
  const frames: RpcFrame[] = [];
  const warnings: string[] = [];
  let up = true;
  const session = (): McpSession => ({
    initializeResult: INIT_RESULT,
    send: (message) => {
      toChild.push(message);
      return Promise.resolve();
    },
    waitingBytes: () => 0,
  });
  const sessions = new Map([
    ['echo', session()],
    ['other', session()],
  ]);
  const router = new RequestRouter({
    sessions: {
      session: (name) => (up ? sessions.get(name) : undefined),
      ...SHARED_ONLY,
    },
    // As the relay client does: a frame that cannot be encoded is not sent.
    send: (frame) => {
      const encoded = encodeFrame(frame, DEFAULT_FRAME_LIMITS);
      if (!encoded.ok) return { sent: false, reason: encoded.reason, code: -32004 };
      frames.push(JSON.parse(encoded.text) as RpcFrame);
      return { sent: true };
    },
    timeoutMs: 60_000,
    clientAnswerTimeoutMs: 30_000,
    maxInFlight,
    maxStdinBytes: 16 * 1024 * 1024,
    warn: (_fields, message) => warnings.push(message),
  });
  return { router, toChild, frames, warnings, stop: () => (up = false) };
}

/** `[[[...]]]`, `depth` arrays deep: JSON.stringify throws a RangeError at a few thousand. */
function nested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

const call = (id: string | number) => ({
  jsonrpc: '2.0' as const,
  id,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'hi' } },
});

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('RequestRouter', () => {
  it('sends requests with agent ids and answers with the server id unchanged', () => {
    const { router, toChild, frames } = setup();
    router.request('echo', call(7));
    router.request('echo', call('seven'));
    const [first, second] = toChild as unknown as [{ id: string }, { id: string }];
    expect(first.id).toMatch(/^relay:\d+$/);
    expect(second.id).not.toBe(first.id);

    router.fromChild('echo', { jsonrpc: '2.0', id: second.id, result: { content: [] } });
    router.fromChild('echo', {
      jsonrpc: '2.0',
      id: first.id,
      result: { content: [{ type: 'text', text: 'hi' }] },
    });
    expect(frames).toEqual([
      {
        type: 'rpc',
        server: 'echo',
        message: { jsonrpc: '2.0', id: 'seven', result: { content: [] } },
      },
      {
        type: 'rpc',
        server: 'echo',
        message: { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'hi' }] } },
      },
    ]);
    // Nothing is left pending: no timeout answers them a second time.
    vi.advanceTimersByTime(120_000);
    expect(frames).toHaveLength(2);
  });

  it('answers initialize from the cached result and swallows notifications/initialized', () => {
    const { router, toChild, frames } = setup();
    router.request('echo', { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
    router.notification('echo', { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(toChild).toEqual([]);
    expect(frames).toEqual([
      { type: 'rpc', server: 'echo', message: { jsonrpc: '2.0', id: 1, result: INIT_RESULT } },
    ]);
  });

  it.each([
    ['an unknown server', 'nope'],
    ['a stopped server', 'echo'],
  ])('answers -32001 for %s', (_case, server) => {
    const { router, frames, stop } = setup();
    stop();
    router.request(server, call(3));
    expect(frames[0]?.message).toMatchObject({ id: 3, error: { code: -32001 } });
    expect(JSON.stringify(frames[0])).toContain(`"${server}"`);
  });

  it('fails pending requests the moment the child exits', () => {
    const { router, frames } = setup();
    router.request('echo', call(1));
    router.sessionClosed('other');
    expect(frames).toHaveLength(0);
    router.sessionClosed('echo');
    expect(frames[0]?.message).toMatchObject({
      id: 1,
      error: { code: -32001, message: 'MCP server "echo" exited or stopped before answering' },
    });
  });

  it('times out after the request timeout, cancels at the child and ignores the late answer', () => {
    const { router, frames, toChild } = setup();
    router.request('echo', call(1));
    const agentId = (toChild[0] as { id: string }).id;
    vi.advanceTimersByTime(59_999);
    expect(frames).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(frames[0]?.message).toMatchObject({ id: 1, error: { code: -32003 } });
    expect(toChild[1]).toMatchObject({
      method: 'notifications/cancelled',
      params: { requestId: agentId },
    });
    router.fromChild('echo', { jsonrpc: '2.0', id: agentId, result: {} });
    expect(frames).toHaveLength(1);
  });

  it('maps the request id of a cancellation from the server', () => {
    const { router, toChild, frames } = setup();
    router.request('echo', call('abc'));
    const agentId = (toChild[0] as { id: string }).id;
    router.notification('echo', {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'abc' },
    });
    expect(toChild[1]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: agentId },
    });
    vi.advanceTimersByTime(120_000);
    expect(frames).toEqual([]);
  });

  it("forwards the child's notifications, but not its own cancellations", () => {
    const { router, frames } = setup();
    router.fromChild('echo', { jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    router.fromChild('echo', {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1 },
    });
    expect(frames).toEqual([
      {
        type: 'rpc',
        server: 'echo',
        message: { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      },
    ]);
  });

  it('counts an answer only from the child the request was sent to', () => {
    const { router, frames, toChild, warnings } = setup();
    router.request('echo', call(1));
    const agentId = (toChild[0] as { id: string }).id;
    router.fromChild('other', { jsonrpc: '2.0', id: agentId, result: { forged: true } });
    expect(frames).toEqual([]);
    expect(warnings).toEqual([
      'dropped an answer from MCP server "other" to a request sent to another server',
    ]);
    router.fromChild('echo', { jsonrpc: '2.0', id: agentId, result: { real: true } });
    expect(frames.map((f) => f.message)).toEqual([
      { jsonrpc: '2.0', id: 1, result: { real: true } },
    ]);
  });

  it('answers -32004 when the answer of the child cannot be encoded (6,000 deep)', () => {
    const { router, frames, toChild, warnings } = setup();
    router.request('echo', call('deep'));
    const agentId = (toChild[0] as { id: string }).id;
    router.fromChild('echo', {
      jsonrpc: '2.0',
      id: agentId,
      result: { content: nested(6_000) },
    });
    expect(frames.map((f) => f.message)).toEqual([
      {
        jsonrpc: '2.0',
        id: 'deep',
        error: {
          code: -32004,
          message: 'answer of MCP server "echo" dropped: nested deeper than 100 levels',
        },
      },
    ]);
    expect(warnings).toHaveLength(1);
    vi.advanceTimersByTime(120_000);
    expect(frames).toHaveLength(1);
  });

  it('drops a notification of the child that cannot be encoded, with a warning', () => {
    const { router, frames, warnings } = setup();
    router.fromChild('echo', {
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { data: nested(6_000) },
    });
    expect(frames).toEqual([]);
    expect(warnings[0]).toContain('nested deeper than 100 levels');
  });

  it('refuses requests over the in-flight cap with -32005, and takes them again later', () => {
    const { router, frames, toChild } = setup(2);
    router.request('echo', call(1));
    router.request('other', call(2));
    router.request('echo', call(3));
    expect(toChild).toHaveLength(2);
    expect(frames.map((f) => f.message)).toEqual([
      {
        jsonrpc: '2.0',
        id: 3,
        error: { code: -32005, message: 'too many relayed requests in flight (at most 2)' },
      },
    ]);
    router.fromChild('echo', { jsonrpc: '2.0', id: (toChild[0] as { id: string }).id, result: {} });
    router.request('echo', call(4));
    expect(toChild).toHaveLength(3);
  });

  it('sends nothing after the connection closed', () => {
    const { router, frames, toChild } = setup();
    router.request('echo', call(1));
    router.close();
    router.fromChild('echo', { jsonrpc: '2.0', id: (toChild[0] as { id: string }).id, result: {} });
    vi.advanceTimersByTime(120_000);
    expect(frames).toHaveLength(0);
  });

  it('refuses requests (-32005) and drops notifications past the bytes waiting for stdin', () => {
    const { router, frames, writes, dropped, readOne } = deafChild();
    for (let i = 0; i < 3; i++) router.request('echo', big(`big-${i}`));
    expect(writes.echo).toHaveLength(3);
    expect(frames).toEqual([]);
    router.request('echo', big('one-too-many'));
    router.notification('echo', bigNotification());
    expect(writes.echo).toHaveLength(3);
    expect(dropped).toEqual([
      ['mcp-stdin', 'echo', 'request'],
      ['mcp-stdin', 'echo', 'notification'],
    ]);
    expect(frames).toEqual([
      {
        type: 'rpc',
        server: 'echo',
        message: {
          jsonrpc: '2.0',
          id: 'one-too-many',
          error: {
            code: -32005,
            message: `too many bytes waiting for MCP server "echo" to read them (at most ${4 * 1024 * 1024})`,
          },
        },
      },
    ]);
    // Another server's stdin is its own: it is not refused for this one's.
    router.request('other', big('elsewhere'));
    expect(writes.other).toHaveLength(1);
    // Once the child reads, there is room again.
    readOne('echo');
    router.notification('echo', bigNotification());
    expect(writes.echo).toHaveLength(4);
    router.close();
  });

  it('counts notifications in the stdin bytes, so they leave no room for requests', () => {
    const { router, frames, writes } = deafChild();
    for (let i = 0; i < 3; i++) router.notification('echo', bigNotification());
    expect(writes.echo).toHaveLength(3);
    router.request('echo', big('refused'));
    expect(writes.echo).toHaveLength(3);
    expect(frames.map((f) => (f.message as { error?: { code: number } }).error?.code)).toEqual([
      -32005,
    ]);
    router.close();
  });

  it('answers -32005 when the connection has no room for an answer, never dropping it silently', () => {
    const { router, toChild, frames, dropped } = congested();
    router.request('echo', call(9));
    const agentId = (toChild[0] as { id: string }).id;
    router.fromChild('echo', { jsonrpc: '2.0', method: 'notifications/message', params: {} });
    router.fromChild('echo', { jsonrpc: '2.0', id: agentId, result: { content: [] } });
    expect(dropped).toEqual([
      ['relay-send', 'echo', 'notification'],
      ['relay-send', 'echo', 'answer'],
    ]);
    expect(frames).toEqual([
      {
        type: 'rpc',
        server: 'echo',
        message: {
          jsonrpc: '2.0',
          id: 9,
          error: { code: -32005, message: 'answer of MCP server "echo" dropped: queue full' },
        },
      },
    ]);
  });
});

const big = (id: string) => ({
  ...call(id),
  params: { name: 'echo', arguments: { text: 'x'.repeat(1024 * 1024) } },
});

const bigNotification = () => ({
  jsonrpc: '2.0' as const,
  method: 'notifications/padding',
  params: { padding: 'x'.repeat(1024 * 1024) },
});

describe("RequestRouter: an MCP server's requests for its client", () => {
  const capable = (session: string) => ({ session, capabilities: { sampling: {}, roots: {} } });
  const ask = (id: number, method = 'sampling/createMessage') => ({
    jsonrpc: '2.0' as const,
    id,
    method,
    params: {},
  });
  const asked = (frames: RpcFrame[]) => frames.filter((f) => f.relatedRequestId !== undefined);
  const errors = (toChild: JSONRPCMessage[]) => toChild.filter((m) => 'error' in m);
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });

  it("sends a call's burst of requests to it while another session's call waits", () => {
    const { router, frames, toChild } = setup();
    router.request('echo', call('a'), undefined, capable('A'));
    router.fromChild('echo', ask(1));
    router.request('echo', call('b'), undefined, capable('B'));
    vi.advanceTimersByTime(1_000);
    router.fromChild('echo', ask(2));
    vi.advanceTimersByTime(1);
    router.fromChild('echo', ask(3, 'roots/list'));
    expect(asked(frames).map((frame) => frame.relatedRequestId)).toEqual(['a', 'b', 'b']);
    expect(errors(toChild)).toEqual([]);
  });

  it("refuses while another session's call asked within the burst window: whose is unknown", () => {
    const { router, frames, toChild } = setup();
    router.request('echo', call('a'), undefined, capable('A'));
    router.fromChild('echo', ask(1));
    router.request('echo', call('b'), undefined, capable('B'));
    vi.advanceTimersByTime(5);
    router.fromChild('echo', ask(2));
    expect(asked(frames).map((frame) => frame.relatedRequestId)).toEqual(['a']);
    expect(errors(toChild)).toMatchObject([{ id: 2, error: { code: -32006 } }]);
  });

  it('notes a capability the client lacked on the answer of its request', () => {
    const { router, frames, toChild } = setup();
    router.request('echo', call('a'), undefined, { session: 'A', capabilities: {} });
    router.fromChild('echo', ask(1));
    expect(errors(toChild)).toMatchObject([{ id: 1, error: { code: -32601 } }]);
    const agentId = (toChild[0] as { id: string }).id;
    router.fromChild('echo', { jsonrpc: '2.0', id: agentId, result: { content: [] } });
    router.request('echo', call('b'), undefined, { session: 'A', capabilities: {} });
    router.fromChild('echo', ask(2, 'roots/list'));
    const failed = { code: -32603, message: 'failed' };
    router.fromChild('echo', {
      jsonrpc: '2.0',
      id: (toChild[2] as { id: string }).id,
      error: failed,
    });
    const note = (capability: string) => ({
      'io.plantstore/missingClientCapabilities': { [capability]: {} },
    });
    expect(frames.map((f) => f.message)).toEqual([
      { jsonrpc: '2.0', id: 'a', result: { content: [], _meta: note('sampling') } },
      { jsonrpc: '2.0', id: 'b', error: { ...failed, data: note('roots') } },
    ]);
  });
});

/** Children that do not read their stdin: what was sent waits until `readOne`; 4 MiB each. */
function deafChild() {
  const frames: RpcFrame[] = [];
  const writes: Record<string, number[]> = { echo: [], other: [] };
  const dropped: [DropPlace, string, DropKind][] = [];
  const waiting = (server: string) => (writes[server] ?? []).reduce((a, b) => a + b, 0);
  const router = new RequestRouter({
    sessions: {
      ...SHARED_ONLY,
      session: (server) => ({
        initializeResult: INIT_RESULT,
        send: (message) => {
          writes[server]?.push(Buffer.byteLength(JSON.stringify(message)));
          return new Promise<void>(() => undefined);
        },
        waitingBytes: () => waiting(server),
      }),
    },
    send: (frame) => {
      frames.push(frame);
      return { sent: true };
    },
    timeoutMs: 60_000,
    clientAnswerTimeoutMs: 30_000,
    maxInFlight: 1_000,
    maxStdinBytes: 4 * 1024 * 1024,
    dropped: (...args) => dropped.push(args),
    warn: () => undefined,
  });
  const readOne = (server: string) => writes[server]!.splice(0, 1, 0);
  return { router, frames, writes, dropped, readOne };
}

/** A connection whose send queue is full: only `always` frames (the agent's own) go out. */
function congested() {
  const toChild: JSONRPCMessage[] = [];
  const frames: RpcFrame[] = [];
  const dropped: [DropPlace, string, DropKind][] = [];
  const router = new RequestRouter({
    sessions: {
      ...SHARED_ONLY,
      session: () => ({
        initializeResult: INIT_RESULT,
        send: (message) => {
          toChild.push(message);
          return Promise.resolve();
        },
        waitingBytes: () => 0,
      }),
    },
    send: (frame, always): SendOutcome => {
      if (!always) return { sent: false, reason: 'queue full', code: -32005 };
      frames.push(frame);
      return { sent: true };
    },
    timeoutMs: 60_000,
    clientAnswerTimeoutMs: 30_000,
    maxInFlight: 1_000,
    maxStdinBytes: 16 * 1024 * 1024,
    dropped: (...args) => dropped.push(args),
    warn: () => undefined,
  });
  return { router, toChild, frames, dropped };
}
