import { request as httpRequest } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { call, isErrorBody } from './support/http.js';
import { openRaw, parseRawAnswer, type RawConnection, waitUntil } from './support/raw-http.js';

/** The HTTP layer's limits, crossed with raw sockets where fetch would not misbehave enough. */
describe('HTTP limits', () => {
  let app: RunningApp;
  beforeAll(async () => {
    app = await startApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  const head = (lines: string[]) =>
    [`POST /plants HTTP/1.1`, 'Host: localhost', ...lines, '', ''].join('\r\n');
  const bearer = () => `Authorization: Bearer ${app.token}`;

  /** Writes `head`, then 64 KiB chunks until the server answers or `maxBytes` are written. */
  async function streamUntilAnswered(headers: string, chunk: Buffer, maxBytes: number) {
    const connection = await openRaw(app.apiUrl);
    await connection.write(headers);
    while (connection.received() === '' && connection.written() < maxBytes) {
      if (!(await connection.write(chunk))) break;
    }
    await waitUntil(() => connection.received().includes('\r\n\r\n'), 3_000);
    await waitUntil(connection.closed, 3_000);
    connection.socket.destroy();
    return connection;
  }

  describe('request bodies are not read before the token is checked, nor past 64 KiB', () => {
    const zeros = Buffer.alloc(64 * 1024, 0x20);

    it('answers 401 to Content-Length: 10000000000 without a token, at once, and closes', async () => {
      const connection = await streamUntilAnswered(
        head(['Content-Type: application/json', 'Content-Length: 10000000000']),
        zeros,
        32 * 1024 * 1024,
      );
      const answer = parseRawAnswer(connection.received());
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ error: 401, message: expect.any(String) as string });
      expect(answer.headers).toContain('www-authenticate: bearer');
      expect(answer.headers).toContain('connection: close');
      expect(connection.closed()).toBe(true);
    });

    it('answers 413 to Content-Length: 10000000000 with a token before reading the body', async () => {
      const connection = await streamUntilAnswered(
        head([bearer(), 'Content-Type: application/json', 'Content-Length: 10000000000']),
        zeros,
        32 * 1024 * 1024,
      );
      const answer = parseRawAnswer(connection.received());
      expect(answer.status).toBe(413);
      expect(answer.body).toEqual({
        error: 413,
        message: 'the request body must be at most 64 KiB',
      });
      expect(answer.headers).toContain('connection: close');
      expect(connection.closed()).toBe(true);
    });

    it('answers 413 at the first chunked byte past 64 KiB and closes', async () => {
      const chunk = Buffer.concat([
        Buffer.from(`${zeros.length.toString(16)}\r\n`),
        zeros,
        Buffer.from('\r\n'),
      ]);
      const connection = await streamUntilAnswered(
        head([bearer(), 'Content-Type: application/json', 'Transfer-Encoding: chunked']),
        chunk,
        32 * 1024 * 1024,
      );
      expect(parseRawAnswer(connection.received()).status).toBe(413);
      expect(connection.closed()).toBe(true);
      // Far less than the 32 MiB the client was ready to send.
      expect(connection.written()).toBeLessThan(8 * 1024 * 1024);
    });

    it('cuts off a body that trickles in with 408 and the Error body', async () => {
      const connection = await openRaw(app.apiUrl);
      await connection.write(
        head([bearer(), 'Content-Type: application/json', 'Content-Length: 1000']),
      );
      await connection.write('{"id": 1, ');
      // 5 s to start plus 1 s per KiB received: the cut comes after about 5 s.
      expect(await waitUntil(connection.closed, 20_000)).toBe(true);
      const answer = parseRawAnswer(connection.received());
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual({
        error: 408,
        message: expect.stringMatching(/too slowly/) as string,
      });
      expect((await call(`${app.apiUrl}/plants/1`, { token: app.token })).status).toBe(404);
    });

    it('accepts a body of exactly 64 KiB and refuses one byte more', async () => {
      const exact = (size: number, id: number) => {
        const start = `{"id": ${id}, "name": "exact"}`;
        return start + ' '.repeat(size - Buffer.byteLength(start));
      };
      const post = (body: string) =>
        call(`${app.apiUrl}/plants`, { method: 'POST', token: app.token, body });
      expect((await post(exact(65_536, 64))).status).toBe(200);
      const over = await post(exact(65_537, 65));
      expect(over.status).toBe(413);
      expect(isErrorBody(over)).toBe(true);
    });

    it('answers 413 for a gzip bomb: 64 KiB counts after decompression', async () => {
      const bomb = gzipSync(Buffer.alloc(10 * 1024 * 1024, 0x20));
      expect(bomb.length).toBeLessThan(64 * 1024);
      const answer = await fetch(`${app.apiUrl}/plants`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${app.token}`,
          'content-type': 'application/json',
          'content-encoding': 'gzip',
        },
        body: bomb,
      });
      expect(answer.status).toBe(413);
      expect(await answer.json()).toEqual({
        error: 413,
        message: 'the request body must be at most 64 KiB',
      });
    });
  });

  describe('path and query tricks', () => {
    /** GET with the path sent exactly as written (fetch would normalise `..` and `//`). */
    const getRaw = (path: string) =>
      new Promise<{ status?: number; text: string }>((resolve, reject) => {
        const request = httpRequest(`${app.apiUrl}${path}`, {
          headers: { authorization: `Bearer ${app.token}` },
        });
        request.path = path;
        request.on('error', reject);
        request.on('response', (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode, text }));
        });
        request.end();
      });

    it.each([
      ['/plants/1/../2', 404],
      ['//plants', 404],
      ['/plants/1%2F2', 400],
      ['/plants/%2e%2e', 400],
      ['/plants/+1', 400],
      ['/plants/%201', 400],
      ['/plants/1;x', 400],
      ['/plants/1e3', 400],
      ['/plants?limit=1&limit=2', 400],
      ['/plants?limit[]=1', 400],
      ['/plants?limit[a]=1', 400],
      ['/plants?cursor=', 400],
      ['/plants?__proto__=1', 400],
    ])('answers %s with %i and the Error body', async (path, status) => {
      const answer = await getRaw(path);
      expect(answer.status).toBe(status);
      expect(Object.keys(JSON.parse(answer.text) as object).sort()).toEqual(['error', 'message']);
    });
  });

  describe('errors are the Error body and say nothing of the internals', () => {
    const compressed = async (encoding: string, body: Buffer) => {
      const answer = await fetch(`${app.apiUrl}/plants`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${app.token}`,
          'content-type': 'application/json',
          'content-encoding': encoding,
        },
        body,
      });
      return { status: answer.status, body: (await answer.json()) as { message: string } };
    };

    it.each(['gzip', 'deflate', 'br'])(
      'refuses a %s body that does not decompress',
      async (encoding) => {
        const answer = await compressed(encoding, Buffer.from('this is not compressed'));
        expect(answer.status).toBe(400);
        expect(answer.body.message).toBe(`the request body is not valid ${encoding} data`);
      },
    );

    it.each([
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ] as const)('reads a %s body', async (encoding, compress) => {
      const id = { gzip: 71, deflate: 72, br: 73 }[encoding];
      const answer = await compressed(encoding, compress(`{"id": ${id}, "name": "${encoding}"}`));
      expect(answer).toEqual({ status: 200, body: { name: encoding } });
    });

    it.each(['/plants/%', '/plants/%ff', '/plants/%E0%A4%A'])(
      'answers 400 for the malformed path %s without the router message',
      async (path) => {
        const answer = await call(`${app.apiUrl}${path}`, { token: app.token });
        expect(answer.status).toBe(400);
        expect(isErrorBody(answer)).toBe(true);
        expect(answer.text).not.toMatch(/decode param/i);
      },
    );

    const rawAnswer = async (request: string) => {
      const connection = await openRaw(app.apiUrl);
      await connection.write(request);
      expect(await waitUntil(connection.closed, 5_000)).toBe(true);
      return parseRawAnswer(connection.received());
    };

    it('answers a malformed request with a 400 Error body', async () => {
      const answer = await rawAnswer('NOT HTTP AT ALL\r\n\r\n');
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ error: 400, message: 'the request is not valid HTTP/1.1' });
      expect(answer.headers).toContain('content-type: application/json');
    });

    it('answers headers over 16 KiB with a 431 Error body', async () => {
      const answer = await rawAnswer(
        `GET /plants HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      expect(answer.status).toBe(431);
      expect(answer.body).toEqual({
        error: 431,
        message: expect.stringMatching(/16 KiB/) as string,
      });
    });

    it('cuts slowloris headers with a 408 Error body', async () => {
      const connection = await openRaw(app.apiUrl);
      await connection.write('GET /plants HTTP/1.1\r\nHost: localhost\r\n');
      // One more header line a second, never the blank line that ends them.
      for (let i = 0; i < 30 && !connection.closed(); i++) {
        await connection.write(`X-Slow-${i}: 1\r\n`);
        await waitUntil(connection.closed, 1_000);
      }
      expect(connection.closed()).toBe(true);
      const answer = parseRawAnswer(connection.received());
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual({ error: 408, message: expect.stringMatching(/10 s/) as string });
    });
  });

  describe('a body refused after it was read whole', () => {
    const sameWrite = (target: RunningApp, body: string) =>
      [
        'POST /plants HTTP/1.1',
        'Host: localhost',
        `Authorization: Bearer ${target.token}`,
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n');
    const answers = (connection: RawConnection) =>
      connection.received().split('HTTP/1.1 ').length - 1;

    // The body comes in the headers' packet: read whole before Node marks the request complete.
    it('keeps the connection: a 400, then a 200 on the same socket, rate limit off and on', async () => {
      const limited = await startApp({ env: { RATE_LIMIT_PER_MINUTE: '1000' } });
      try {
        for (const target of [app, limited]) {
          const connection = await openRaw(target.apiUrl);
          await connection.write(sameWrite(target, '{"id":1,"name":"a","colour":"red"}'));
          await waitUntil(() => parseRawAnswer(connection.received()).body !== undefined, 3_000);
          const refused = parseRawAnswer(connection.received());
          expect(refused.status).toBe(400);
          expect(refused.headers).not.toContain('connection: close');
          const id = 7_000_000 + Math.floor(Math.random() * 1_000_000);
          await connection.write(sameWrite(target, `{"id":${id},"name":"kept"}`));
          await waitUntil(() => answers(connection) === 2 || connection.closed(), 3_000);
          expect(connection.received()).toContain('HTTP/1.1 200 OK');
          connection.socket.destroy();
        }
      } finally {
        await limited.stop();
      }
    });
  });

  describe('idle keep-alive connections', () => {
    it("are kept 65 s by default, past load balancers' 60 s, and every listener says so", async () => {
      for (const url of [`${app.apiUrl}/plants/1`, `${app.healthUrl}/health`]) {
        const response = await fetch(url, { headers: { Authorization: `Bearer ${app.token}` } });
        await response.arrayBuffer();
        expect(response.headers.get('keep-alive'), url).toBe('timeout=65');
      }
    });

    it('are closed after KEEP_ALIVE_TIMEOUT_SECONDS, and not before', async () => {
      const short = await startApp({ env: { KEEP_ALIVE_TIMEOUT_SECONDS: '1' } });
      try {
        const connection = await openRaw(short.apiUrl);
        await connection.write(`GET /plants/1 HTTP/1.1\r\nHost: localhost\r\n\r\n`);
        await waitUntil(() => connection.received().includes('\r\n\r\n'), 3_000);
        const answered = Date.now();
        expect(parseRawAnswer(connection.received()).headers).toContain('keep-alive: timeout=1');
        expect(await waitUntil(connection.closed, 5_000)).toBe(true);
        expect(Date.now() - answered).toBeGreaterThanOrEqual(900);
      } finally {
        await short.stop();
      }
    });
  });
});
