import { createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { pino } from 'pino';
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { ClientRequest } from '../auth/client-request.js';
import type { RelayConfig } from '../config/relay-config.js';
import { PeerDispatcher } from './peer-agents.js';
import { PeerForwarder } from './peer-forwarder.service.js';
import type { RelayCluster } from './relay-cluster.service.js';

/**
 * PeerForwarder on real sockets: a client talks to this replica, which passes its request to
 * a peer. Which outcomes make the peer a suspect (its sessions then move away) matters: only a
 * peer that is gone may become one.
 */
const servers: Server[] = [];

afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A peer holding a session's event stream open: headers at once, then no event. */
const streamingPeer = () =>
  listen(
    createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
    }),
  );

/** A port nothing listens on: the connection is refused. */
async function closedPort(): Promise<string> {
  const server = createServer();
  const url = await listen(server);
  servers.pop();
  await new Promise((resolve) => server.close(resolve));
  return url;
}

type Place = (target: unknown, hungUp: AbortSignal) => Promise<unknown>;

function forwarder(peer: string, suspects: string[], place?: Place): PeerForwarder {
  const cluster = {
    enabled: true,
    peerCredentials: () => ({ 'x-relay-peer-signature': 'signed' }),
    place: place ?? (() => Promise.resolve({ kind: 'peer', url: peer })),
    suspect: (url: string) => suspects.push(url),
  } as unknown as RelayCluster;
  const config = { requestTimeoutMs: 5000, agentProbeTimeoutMs: 1000, basePath: '' };
  const counter = (name: string) =>
    new Counter({ name, help: name, labelNames: ['outcome'], registers: [new Registry()] });
  return new PeerForwarder(
    config as RelayConfig,
    pino({ level: 'silent' }),
    cluster,
    new PeerDispatcher({ tls: undefined }),
    counter('forwarded'),
    counter('refusals'),
    counter('unresponsive'),
  );
}

/** This replica: every request goes through the forwarder; `handled` settles when it is done. */
async function replica(
  forward: PeerForwarder,
): Promise<{ url: string; handled: Promise<boolean> }> {
  let done: (handled: boolean) => void = () => undefined;
  const handled = new Promise<boolean>((resolve) => (done = resolve));
  const app = express().get('/mcp/plants', (request, response) => {
    const target = { client: 'c', agent: 'plants', server: undefined, sessionId: 'abc' };
    void forward.handled(request as ClientRequest, response, target).then(done);
  });
  return { url: await listen(createServer(app)), handled };
}

const headersOf = (url: string) =>
  new Promise<IncomingMessage>((resolve, reject) =>
    get(`${url}/mcp/plants`, resolve).on('error', reject),
  );

describe('PeerForwarder', () => {
  it('keeps a peer whose client closed its own event stream', async () => {
    const suspects: string[] = [];
    const { url, handled } = await replica(forwarder(await streamingPeer(), suspects));
    const stream = await headersOf(url);
    stream.destroy();
    expect(await handled).toBe(true);
    expect(suspects).toEqual([]);
  });

  it('stops waiting for a placement when the client hangs up', async () => {
    // A session whose home is gone: placing it waits until the client leaves.
    let placing = (): void => undefined;
    const placed = new Promise<void>((resolve) => (placing = resolve));
    const waitForever: Place = (_target, hungUp) => {
      placing();
      return new Promise((resolve) => hungUp.addEventListener('abort', () => resolve({})));
    };
    const { url, handled } = await replica(forwarder('', [], waitForever));
    const request = get(`${url}/mcp/plants`).on('error', () => undefined);
    await placed;
    request.destroy();
    expect(await handled).toBe(true);
  });

  it('suspects a peer that refuses the connection', async () => {
    const suspects: string[] = [];
    const peer = await closedPort();
    const { url, handled } = await replica(forwarder(peer, suspects));
    const answer = await headersOf(url);
    answer.resume();
    expect(await handled).toBe(true);
    expect(answer.statusCode).toBe(502);
    expect(suspects).toContain(peer);
  });
});
