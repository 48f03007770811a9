import { Agent, createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionDrain } from './connection-drain.js';

/** A real server on a loopback port whose handler answers when the test says so. */
async function serverWithHeldAnswers() {
  const held: (() => void)[] = [];
  const server = createServer((_request, response) => {
    held.push(() => response.end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return { server, held, url };
}

function request(url: string, agent: Agent): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(url, { agent }, (response) => {
      response.resume();
      response.on('end', () => resolve(response));
    }).on('error', reject);
  });
}

describe('ConnectionDrain', () => {
  let server: Server | undefined;
  const agent = new Agent({ keepAlive: true });
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  it('tells the request in flight to close its connection and resolves once it is answered', async () => {
    const setup = await serverWithHeldAnswers();
    server = setup.server;
    const drain = new ConnectionDrain([server]);
    const answer = request(setup.url, agent);
    await expect.poll(() => setup.held.length).toBe(1);

    let outcome: string | undefined;
    const drained = drain.drain(10_000).then((result) => (outcome = result));
    // Still in flight: the drain waits for it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcome).toBeUndefined();
    setup.held[0]!();
    expect((await answer).headers.connection).toBe('close');
    expect(await drained).toBe('drained');
    expect(server.listening).toBe(false);
  });

  it('cuts what is still in flight when the grace runs out', async () => {
    const setup = await serverWithHeldAnswers();
    server = setup.server;
    const drain = new ConnectionDrain([server]);
    const answer = request(setup.url, agent).then(
      () => 'answered',
      () => 'cut',
    );
    await expect.poll(() => setup.held.length).toBe(1);
    expect(await drain.drain(50)).toBe('cut');
    expect(await answer).toBe('cut');
  });

  it('resolves at once when nothing is in flight', async () => {
    const setup = await serverWithHeldAnswers();
    server = setup.server;
    expect(await new ConnectionDrain([server]).drain(10_000)).toBe('drained');
  });
});
