import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { PeerProbe } from './peer-probe.js';

/**
 * PeerProbe against real sockets: a "frozen" peer accepts connections and never answers (as a
 * SIGSTOPped process whose kernel still completes handshakes), a live one answers the ping.
 */
const servers: { close: () => void }[] = [];
const sockets: Socket[] = [];

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) server.close();
});

async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const frozenPeer = () => listen(createTcpServer((socket) => sockets.push(socket)));
const pings: string[] = [];
const livePeer = () =>
  listen(
    createHttpServer((request, response) => {
      pings.push(String(request.headers['x-secret']));
      response.writeHead(401).end();
    }),
  );

function probe(frozen: { peer: string; cut: number }[]) {
  return new PeerProbe({
    requestTimeoutMs: 50,
    pingTimeoutMs: 100,
    pingUrl: (peer) => new URL('/relay-peer/ping', peer),
    pingHeaders: () => ({ 'x-secret': 's3' }),
    dispatcher: new Agent(),
    onFrozen: (peer, cut) => frozen.push({ peer, cut }),
  });
}

const aborted = (signal: AbortSignal) =>
  new Promise<number>((resolve) => {
    const since = Date.now();
    signal.addEventListener('abort', () => resolve(Date.now() - since));
  });
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('PeerProbe', () => {
  it('cuts every request waiting on a peer that answers no ping, once', async () => {
    const peer = await frozenPeer();
    const frozen: { peer: string; cut: number }[] = [];
    const watch = probe(frozen);
    // Timers count from the loop's clock, updated as a turn of the loop begins: tracked at the
    // start of a turn, the timeouts start from now, not from a clock left behind by the awaits.
    await new Promise((resolve) => setImmediate(resolve));
    const waiting = [watch.track(peer, () => false), watch.track(peer, () => false)];
    const after = await Promise.all(waiting.map((w) => aborted(w.signal)));
    // The request timeout, then the ping's: not each request's own timeout.
    for (const ms of after) expect(ms).toBeGreaterThanOrEqual(140);
    expect(frozen).toEqual([{ peer, cut: 2 }]);
    // One ping for both: one connection reached the peer.
    expect(sockets).toHaveLength(1);
    for (const w of waiting) w.done();
  });

  it('keeps the requests of a peer that answers its ping, whatever the status', async () => {
    const peer = await livePeer();
    const frozen: { peer: string; cut: number }[] = [];
    const waiting = probe(frozen).track(peer, () => false);
    // Past the request timeout and the ping's deadline.
    await settle(300);
    expect(waiting.signal.aborted).toBe(false);
    expect(frozen).toEqual([]);
    expect(pings).toContain('s3');
    waiting.done();
  });

  it('pings no peer whose answer began, nor one whose request is over', async () => {
    const peer = await frozenPeer();
    const frozen: { peer: string; cut: number }[] = [];
    const watch = probe(frozen);
    const answering = watch.track(peer, () => true);
    watch.track(peer, () => false).done();
    // Past the request timeout and the ping's: nothing may have happened.
    await settle(300);
    expect(answering.signal.aborted).toBe(false);
    expect(frozen).toEqual([]);
    expect(sockets).toHaveLength(0);
    answering.done();
  });
});
