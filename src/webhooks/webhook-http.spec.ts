import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestCa } from '../../test/fixtures/agent-server/test-ca.js';
import { PRIVATE_ADDRESS, type PosterLimits, WebhookPoster } from './webhook-http.js';

/** A receiver on loopback whose answer each test writes. */
async function receiver(
  answer: (response: ServerResponse) => void,
  tls?: { cert: string; key: string },
) {
  const requests: IncomingMessage[] = [];
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    requests.push(request);
    request.resume();
    request.on('end', () => {
      answer(response);
    });
  };
  const server: Server = tls ? createTlsServer(tls, handle) : createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = new URL(`${tls ? 'https' : 'http'}://127.0.0.1:${port}/hook`);
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url, requests };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const settled = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
const never = new AbortController().signal;
const limits = (overrides: Partial<PosterLimits> = {}): PosterLimits => ({
  maxInFlightPerReceiver: 1,
  maxAnswerBytes: 4096,
  timeoutMs: 5_000,
  allowPrivateAddresses: true,
  ...overrides,
});

describe('WebhookPoster', () => {
  it('answers with the status once the whole answer has arrived', async () => {
    const { url } = await receiver((response) =>
      response.writeHead(202, { 'retry-after': '7' }).end('accepted'),
    );
    const poster = new WebhookPoster(url, limits());
    cleanups.push(() => poster.close());
    await expect(poster.post({}, '{"id":1}', never)).resolves.toEqual({
      status: 202,
      retryAfter: '7',
      cut: false,
    });
  });

  it('reads at most the answer limit of an endless answer, then closes it', async () => {
    let written = 0;
    const { url } = await receiver((response) => {
      response.writeHead(200);
      const more = () => {
        while (response.write(Buffer.alloc(16_384, 'x'))) written += 16_384;
        if (!response.destroyed) response.once('drain', more);
      };
      more();
    });
    const poster = new WebhookPoster(url, limits());
    cleanups.push(() => poster.close());
    const started = Date.now();
    // Before: read to the end of the timeout (here 5 s) and failed as a timeout.
    await expect(poster.post({}, '{"id":1}', never)).resolves.toMatchObject({
      status: 200,
      cut: true,
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(written).toBeLessThan(8 * 1024 * 1024);
  });

  it('an answer that stalls mid-body fails at the timeout', async () => {
    const { url } = await receiver((response) => {
      response.writeHead(200, { 'content-length': '10' });
      response.write('x');
    });
    const poster = new WebhookPoster(url, limits({ timeoutMs: 300 }));
    cleanups.push(() => poster.close());
    const outcome = await settled(poster.post({}, '{"id":1}', never));
    expect((outcome as { error: Error }).error.name).toBe('TimeoutError');
  });

  it('an answer the receiver cuts short fails its attempt', async () => {
    const { url } = await receiver((response) => {
      response.writeHead(200, { 'content-length': '10' });
      response.write('x', () => response.socket?.destroy());
    });
    const poster = new WebhookPoster(url, limits());
    cleanups.push(() => poster.close());
    const outcome = await settled(poster.post({}, '{"id":1}', never));
    expect((outcome as { error: { code?: string } }).error.code).toBe('ECONNRESET');
  });

  it('does not follow a redirect: the 3xx is the answer', async () => {
    const { url, requests } = await receiver((response) =>
      response.writeHead(307, { location: '/elsewhere' }).end(),
    );
    const poster = new WebhookPoster(url, limits());
    cleanups.push(() => poster.close());
    await expect(poster.post({}, '{"id":1}', never)).resolves.toMatchObject({ status: 307 });
    expect(requests.map((r) => r.url)).toEqual(['/hook']);
  });

  it("sends the URL's credentials as Basic authorization", async () => {
    const { url, requests } = await receiver((response) => response.writeHead(204).end());
    url.username = 'plant%20store';
    url.password = 'winter2026';
    const poster = new WebhookPoster(url, limits());
    cleanups.push(() => poster.close());
    await expect(poster.post({}, '{"id":1}', never)).resolves.toMatchObject({ status: 204 });
    const sent = Buffer.from('plant store:winter2026').toString('base64');
    expect(requests[0]?.headers.authorization).toBe(`Basic ${sent}`);
  });

  it.each([
    ['', undefined],
    [', even with NODE_TLS_REJECT_UNAUTHORIZED=0', '0'],
  ])('refuses a receiver whose certificate does not verify%s', async (_, rejectUnauthorized) => {
    if (rejectUnauthorized !== undefined) {
      vi.stubEnv('NODE_TLS_REJECT_UNAUTHORIZED', rejectUnauthorized);
      cleanups.push(() => {
        vi.unstubAllEnvs();
      });
    }
    const { cert, key } = createTestCa();
    const { url, requests } = await receiver((response) => response.writeHead(200).end(), {
      cert,
      key,
    });
    const poster = new WebhookPoster(url, limits());
    cleanups.push(() => poster.close());
    const outcome = await settled(poster.post({}, '{"id":1}', never));
    expect((outcome as { error: { code?: string } }).error.code).toBe(
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    );
    expect(requests).toHaveLength(0);
  });

  describe('a receiver on a private address', () => {
    const cases = [
      ['an IP literal', (url: URL) => url],
      ['a name that resolves to one', (url: URL) => Object.assign(url, { hostname: 'localhost' })],
    ] as const;
    for (const [name, target] of cases) {
      it(`${name}: refused unless private addresses are allowed`, async () => {
        const { url, requests } = await receiver((response) => response.writeHead(200).end());
        const refusing = new WebhookPoster(
          target(new URL(url)),
          limits({ allowPrivateAddresses: false }),
        );
        const allowing = new WebhookPoster(target(new URL(url)), limits());
        cleanups.push(
          () => refusing.close(),
          () => allowing.close(),
        );
        const outcome = await settled(refusing.post({}, '{"id":1}', never));
        expect((outcome as { error: { code?: string } }).error.code).toBe(PRIVATE_ADDRESS);
        expect(requests).toHaveLength(0);
        await expect(allowing.post({}, '{"id":1}', never)).resolves.toMatchObject({ status: 200 });
        expect(requests).toHaveLength(1);
      });
    }
  });
});
