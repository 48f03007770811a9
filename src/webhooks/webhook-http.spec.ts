import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookPoster } from './webhook-http.js';

/** A receiver on loopback whose answer each test writes. */
async function receiver(answer: (response: ServerResponse) => void) {
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      answer(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url };
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

describe('WebhookPoster', () => {
  it('answers with the status once the whole answer has arrived', async () => {
    const { url } = await receiver((response) =>
      response.writeHead(202, { 'retry-after': '7' }).end('accepted'),
    );
    const poster = new WebhookPoster(url, {
      maxSockets: 1,
      maxAnswerBytes: 4096,
      timeoutMs: 5_000,
    });
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
    const poster = new WebhookPoster(url, {
      maxSockets: 1,
      maxAnswerBytes: 4096,
      timeoutMs: 5_000,
    });
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
    const poster = new WebhookPoster(url, { maxSockets: 1, maxAnswerBytes: 4096, timeoutMs: 300 });
    cleanups.push(() => poster.close());
    const outcome = await settled(poster.post({}, '{"id":1}', never));
    expect((outcome as { error: Error }).error.name).toBe('TimeoutError');
  });

  it('an answer the receiver cuts short fails its attempt', async () => {
    const { url } = await receiver((response) => {
      response.writeHead(200, { 'content-length': '10' });
      response.write('x', () => response.socket?.destroy());
    });
    const poster = new WebhookPoster(url, {
      maxSockets: 1,
      maxAnswerBytes: 4096,
      timeoutMs: 5_000,
    });
    cleanups.push(() => poster.close());
    const outcome = await settled(poster.post({}, '{"id":1}', never));
    expect((outcome as { error: { code?: string } }).error.code).toBe('ECONNRESET');
  });
});
