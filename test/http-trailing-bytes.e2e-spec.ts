import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';
import { openRaw, waitUntil } from './support/raw-http.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';

/**
 * A valid request followed on the same connection by bytes that are not HTTP: the request is
 * carried out, so its answer must come first; the 400 for the bytes after it may follow.
 */
async function sendRaw(url: string, bytes: string): Promise<string[]> {
  const connection = await openRaw(url);
  await connection.write(bytes);
  expect(await waitUntil(connection.closed, 10_000)).toBe(true);
  // The status line of every answer, in order.
  return [...connection.received().matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1] ?? '');
}

const GARBAGE = 'GARBAGE\r\n\r\n';

describe('a request followed by bytes that are not HTTP/1.1', () => {
  let app: RunningApp;
  beforeAll(async () => {
    app = await startApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  const request = (method: string, path: string, body = '') =>
    [
      `${method} ${path} HTTP/1.1`,
      'Host: localhost',
      `Authorization: Bearer ${app.token}`,
      ...(body ? ['Content-Type: application/json', `Content-Length: ${body.length}`] : []),
      '',
      body,
    ].join('\r\n');
  const create = (id: number) =>
    call(`${app.apiUrl}/plants`, {
      method: 'POST',
      token: app.token,
      body: `{"id":${id},"name":"p"}`,
    });
  const status = async (id: number) =>
    (await call(`${app.apiUrl}/plants/${id}`, { token: app.token })).status;

  it('answers a DELETE carried out 204 first, then 400 for the unframed bytes', async () => {
    expect((await create(1)).status).toBe(200);
    const answers = await sendRaw(app.apiUrl, `${request('DELETE', '/plants/1')}garbage`);
    expect(answers).toEqual(['204', '400']);
    expect(await status(1)).toBe(404);
  });

  it('answers a POST carried out 200 first, then 400', async () => {
    const answers = await sendRaw(
      app.apiUrl,
      `${request('POST', '/plants', '{"id":2,"name":"p"}')}${GARBAGE}`,
    );
    expect(answers).toEqual(['200', '400']);
    expect(await status(2)).toBe(200);
  });

  it('answers every pipelined request before the 400', async () => {
    expect((await create(5)).status).toBe(200);
    const answers = await sendRaw(
      app.apiUrl,
      `${request('POST', '/plants', '{"id":3,"name":"p"}')}${request('DELETE', '/plants/5')}${GARBAGE}`,
    );
    expect(answers).toEqual(['200', '204', '400']);
    expect([await status(3), await status(5)]).toEqual([200, 404]);
  });

  it("gives Node's own DELETE with a body (sent unframed) the DELETE's answer", async () => {
    expect((await create(4)).status).toBe(200);
    const { port } = new URL(app.apiUrl);
    const statusCode = await new Promise<number | undefined>((resolve, reject) => {
      const outgoing = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/plants/4',
          method: 'DELETE',
          headers: { authorization: `Bearer ${app.token}`, connection: 'close' },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode);
        },
      );
      outgoing.on('error', reject);
      outgoing.end('{"x":1}');
    });
    expect(statusCode).toBe(204);
    expect(await status(4)).toBe(404);
  });

  it('still answers bytes that are not HTTP alone with 400', async () => {
    expect(await sendRaw(app.apiUrl, GARBAGE)).toEqual(['400']);
  });

  it('answers the health and metrics ports the same way', async () => {
    for (const [url, path] of [
      [app.healthUrl, '/health/live'],
      [app.metricsUrl, '/metrics'],
    ] as const) {
      const answers = await sendRaw(
        url,
        `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n${GARBAGE}`,
      );
      expect(answers, url).toEqual(['200', '400']);
    }
  });
});

describe('the relay server: a request followed by bytes that are not HTTP/1.1', () => {
  const clientToken = newToken();
  let relay: RunningRelay;
  beforeAll(async () => {
    relay = await startRelay({
      env: {
        RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(newToken()) }),
        RELAY_CLIENTS: JSON.stringify({
          alice: { tokens: sha256Entry(clientToken), agents: ['shop'] },
        }),
      },
    });
  });
  afterAll(async () => {
    await relay.stop();
  });

  it('answers an initialize that opened a session first, then 400', async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    });
    const answers = await sendRaw(
      `http://127.0.0.1:${relay.port}`,
      [
        'POST /mcp/shop HTTP/1.1',
        'Host: localhost',
        `Authorization: Bearer ${clientToken}`,
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
        `Content-Length: ${body.length}`,
        '',
        `${body}${GARBAGE}`,
      ].join('\r\n'),
    );
    expect(answers).toEqual(['200', '400']);
  });

  it('answers the health and metrics ports the same way', async () => {
    for (const [url, path] of [
      [relay.healthUrl, '/health/live'],
      [relay.metricsUrl, '/metrics'],
    ] as const) {
      const answers = await sendRaw(
        url,
        `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n${GARBAGE}`,
      );
      expect(answers, url).toEqual(['200', '400']);
    }
  });
});
