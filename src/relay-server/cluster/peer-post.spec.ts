import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { type PeerReply, postToPeer } from './peer-post.js';

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

function post(url: URL, signal = new AbortController().signal): Promise<PeerReply> {
  return postToPeer({
    url,
    headers: { 'content-type': 'application/json' },
    body: '{"id":1}',
    dispatcher: new Agent(),
    timeoutMs: 200,
    maxBytes: 16,
    signal,
  });
}

describe('postToPeer', () => {
  it('reads a whole answer: its status and JSON body', async () => {
    const url = await peer((request, response) => request.pipe(response.writeHead(202)));
    expect(await post(url)).toEqual({ status: 202, body: { id: 1 } });
  });

  it.each<[string, () => Promise<URL>, PeerReply]>([
    ['refused', closedPort, { failed: 'refused' }],
    ['timeout', () => peer(() => undefined), { failed: 'timeout' }],
    ['too_large', () => peer((_q, r) => r.end('x'.repeat(17))), { failed: 'too_large' }],
    ['lost', () => peer((_q, r) => r.socket?.destroy()), { failed: 'lost' }],
  ])('ends as %s', async (_name, start, reply) => {
    expect(await post(await start())).toEqual(reply);
  });

  it('ends as aborted when the caller gives up', async () => {
    const url = await peer(() => undefined);
    expect(await post(url, AbortSignal.timeout(20))).toEqual({ failed: 'aborted' });
  });
});
