import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { RelayErrorCode } from '../../agent-protocol/relay-protocol.js';
import { answerOf, type PeerReply, postToPeer, withEnvelope } from './peer-post.js';

/** postToPeer against real sockets: each way an exchange can end, and its outcome. */
const servers: Server[] = [];

afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function peer(listener: RequestListener): Promise<URL> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp/a/b`);
}

async function closedPort(): Promise<URL> {
  const url = await peer(() => undefined);
  const server = servers.pop();
  await new Promise((resolve) => server?.close(resolve));
  return url;
}

// A timeout the machine's load cannot reach, but for the case that waits it out.
function post(
  url: URL,
  signal = new AbortController().signal,
  timeoutMs = 10_000,
): Promise<PeerReply> {
  return postToPeer({
    url,
    headers: { 'content-type': 'application/json' },
    body: '{"id":1}',
    dispatcher: new Agent(),
    timeoutMs,
    maxBytes: 16,
    signal,
  });
}

describe('postToPeer', () => {
  it('reads a whole answer: its status and JSON body', async () => {
    const url = await peer((request, response) => request.pipe(response.writeHead(202)));
    expect(await post(url)).toEqual({ status: 202, body: { id: 1 } });
  });

  it.each<[string, () => Promise<URL>, PeerReply, number?]>([
    ['refused', closedPort, { failed: 'refused' }],
    ['timeout', () => peer(() => undefined), { failed: 'timeout' }, 200],
    ['too_large', () => peer((_q, r) => r.end('x'.repeat(17))), { failed: 'too_large' }],
    ['lost', () => peer((_q, r) => r.socket?.destroy()), { failed: 'lost' }],
  ])('ends as %s', async (_name, start, reply, timeoutMs) => {
    expect(await post(await start(), undefined, timeoutMs)).toEqual(reply);
  });

  it('ends as aborted when the caller gives up', async () => {
    const url = await peer(() => undefined);
    expect(await post(url, AbortSignal.timeout(20))).toEqual({ failed: 'aborted' });
  });
});

const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

const envelope = { [VERSION_KEY]: '2026-07-28', [CAPABILITIES_KEY]: {} };

describe('withEnvelope', () => {
  it('adds the 2026-07-28 envelope to _meta and keeps the rest', () => {
    const message = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'whoami', _meta: { progressToken: 'p' } },
    };
    expect(withEnvelope(message)).toEqual({
      ...message,
      params: { name: 'whoami', _meta: { progressToken: 'p', ...envelope } },
    });
    expect(withEnvelope({ jsonrpc: '2.0', id: 1, method: 'tools/list' }).params).toEqual({
      _meta: envelope,
    });
  });
});

describe('answerOf', () => {
  it('takes the 2026 fields off a result', () => {
    const body = {
      jsonrpc: '2.0',
      id: 1,
      result: { tools: [], resultType: 'complete', ttlMs: 0, cacheScope: 'private' },
    };
    expect(answerOf({ status: 200, body }, 'pears').result).toEqual({ tools: [] });
  });

  it('passes a JSON-RPC error on as it is', () => {
    const body = { jsonrpc: '2.0', id: 1, error: { code: -32005, message: 'too many' } };
    expect(answerOf({ status: 429, body }, 'pears').error).toEqual(body.error);
  });

  it.each([
    ['refused', { failed: 'refused' as const }, RelayErrorCode.ServerUnavailable],
    ['lost', { failed: 'lost' as const }, RelayErrorCode.ServerUnavailable],
    ['too large', { failed: 'too_large' as const }, RelayErrorCode.ServerUnavailable],
    ['timed out', { failed: 'timeout' as const }, RelayErrorCode.RequestTimeout],
    ['cancelled', { failed: 'aborted' as const }, -32800],
    ['not JSON', { status: 502, body: undefined }, RelayErrorCode.ServerUnavailable],
    ['a 404 page', { status: 404, body: { message: 'no such MCP endpoint' } }, -32001],
    ['a malformed error', { status: 200, body: { error: { code: 'x' } } }, -32001],
  ])('answers a peer that %s with an error', (_, reply, code) => {
    expect(answerOf(reply, 'pears').error?.code).toBe(code);
  });
});
