import {
  createServer,
  get,
  type IncomingMessage,
  type RequestListener,
  type Server,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { type PeerOutcome, requestPeer } from './peer-request.js';

/**
 * requestPeer on real sockets: a client asks this replica, which passes its request to a peer
 * and says how the exchange ended; what the client saw is checked too.
 */
const servers: Server[] = [];

afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function listen(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closedPort(): Promise<string> {
  const url = await listen(() => undefined);
  const server = servers.pop();
  await new Promise((resolve) => server?.close(resolve));
  return url;
}

/** This replica: passes GET /mcp to `peer`; `outcome` settles when the exchange is over. */
async function replica(peer: string): Promise<{ url: string; outcome: Promise<PeerOutcome> }> {
  let done: (outcome: PeerOutcome) => void = () => undefined;
  const outcome = new Promise<PeerOutcome>((resolve) => (done = resolve));
  const app = express().get('/mcp', (_request, response) => {
    const call = {
      url: new URL('/mcp', peer),
      method: 'GET',
      headers: { 'x-passed': 'yes' },
      body: undefined,
      dispatcher: new Agent(),
      headersTimeout: 200,
      signal: new AbortController().signal,
    };
    void requestPeer(call, response).then((ended) => {
      if (!response.writableEnded) response.end();
      done(ended);
    });
  });
  return { url: await listen(app), outcome };
}

const ask = (url: string) =>
  new Promise<IncomingMessage>((resolve, reject) => get(`${url}/mcp`, resolve).on('error', reject));

async function text(answer: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of answer) body += String(chunk);
  return body;
}

describe('requestPeer', () => {
  it("passes the peer's status, headers and body", async () => {
    const peer = await listen((request, response) =>
      response.writeHead(201, { 'x-peer': String(request.headers['x-passed']) }).end('hello'),
    );
    const { url, outcome } = await replica(peer);
    const answer = await ask(url);
    expect([answer.statusCode, answer.headers['x-peer'], await text(answer)]).toEqual([
      201,
      'yes',
      'hello',
    ]);
    expect(await outcome).toBe('answered');
  });

  it.each<[PeerOutcome, () => Promise<string>]>([
    ['refused', closedPort],
    ['distrusted', () => listen((_q, r) => r.writeHead(401).end())],
    ['lost_before_answer', () => listen((q) => q.socket.destroy())],
    ['lost_before_answer', () => listen(() => undefined)],
    ['lost_while_answering', () => listen((q, r) => r.write('part', () => q.socket.destroy()))],
  ])('ends as %s', async (expected, start) => {
    const { url, outcome } = await replica(await start());
    (await ask(url)).resume();
    expect(await outcome).toBe(expected);
  });

  it('ends as client_gone and closes the peer request when the client hangs up', async () => {
    let peerClosed: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (peerClosed = resolve));
    const peer = await listen((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
      request.socket.once('close', peerClosed);
    });
    const { url, outcome } = await replica(peer);
    (await ask(url)).destroy();
    expect(await outcome).toBe('client_gone');
    await closed;
  });
});
