import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestGroup, WebhookPoster } from './webhook-http.js';

/** A receiver on loopback whose answer each test writes. */
async function receiver(answer: (response: ServerResponse) => void) {
  const seen: number[] = [];
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      seen.push(Date.now());
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
  return { url, seen };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const cut = new Error('the attempt timed out');
const settled = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('WebhookPoster', () => {
  it('answers with the status once the whole answer has arrived', async () => {
    const { url } = await receiver((response) =>
      response.writeHead(202, { 'retry-after': '7' }).end('accepted'),
    );
    const poster = new WebhookPoster(url, 1);
    cleanups.push(() => poster.close());
    await expect(poster.post({}, '{"id":1}', new RequestGroup())).resolves.toEqual({
      status: 202,
      retryAfter: '7',
    });
  });

  it('a cut ends attempts whose answer stalls mid-body, and those queued behind them', async () => {
    // 200 and one byte of a ten-byte body, then nothing: the connection stays taken.
    const { url, seen } = await receiver((response) => {
      response.writeHead(200, { 'content-length': '10' });
      response.write('x');
    });
    const poster = new WebhookPoster(url, 1);
    cleanups.push(() => poster.close());
    const group = new RequestGroup();
    const first = settled(poster.post({}, '{"id":1}', group));
    const queued = settled(poster.post({}, '{"id":2}', group));
    // The precondition: the first answer has begun (one socket, so the second waits for it).
    await until(() => seen.length === 1);
    group.cutAll(cut);
    // Before: the first resolved as delivered at its headers and the queued one never settled.
    expect(await first).toEqual({ error: cut });
    expect(await queued).toEqual({ error: cut });
  });

  it('an answer the receiver cuts short fails its attempt', async () => {
    const { url } = await receiver((response) => {
      response.writeHead(200, { 'content-length': '10' });
      response.write('x', () => response.socket?.destroy());
    });
    const poster = new WebhookPoster(url, 1);
    cleanups.push(() => poster.close());
    const outcome = await settled(poster.post({}, '{"id":1}', new RequestGroup()));
    expect(outcome).toHaveProperty('error');
    expect((outcome as { error: { code?: string } }).error.code).toBe('ECONNRESET');
  });
});
