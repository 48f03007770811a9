import { Agent, createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionDrain } from './connection-drain.js';

/** A real server on a loopback port whose handler answers when the test says so. */
async function serverWithHeldAnswers() {
  const held: (() => void)[] = [];
  const byPath = new Map<string, () => void>();
  const server = createServer((request, response) => {
    const answer = () => response.end('ok');
    held.push(answer);
    byPath.set(request.url ?? '', answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return { server, held, byPath, url };
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

  it('keeps track of requests answered out of order', async () => {
    const setup = await serverWithHeldAnswers();
    server = setup.server;
    const drain = new ConnectionDrain([server]);
    const agents = [0, 1, 2, 3].map(() => new Agent({ keepAlive: true }));
    try {
      const answers = agents.map((each, index) => request(`${setup.url}${index}`, each));
      await expect.poll(() => setup.byPath.size).toBe(4);
      const answer = (index: number) => setup.byPath.get(`/${index}`)!();
      // Whichever came last takes the place of the one answered, then may leave it too.
      for (const index of [1, 3]) {
        answer(index);
        expect((await answers[index]!).headers.connection).toBe('keep-alive');
      }

      let outcome: string | undefined;
      const drained = drain.drain(2_000).then((result) => (outcome = result));
      answer(2);
      expect((await answers[2]!).headers.connection).toBe('close');
      await new Promise((resolve) => setImmediate(resolve));
      expect(outcome).toBeUndefined();
      answer(0);
      expect((await answers[0]!).headers.connection).toBe('close');
      expect(await drained).toBe('drained');
    } finally {
      for (const each of agents) each.destroy();
    }
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
