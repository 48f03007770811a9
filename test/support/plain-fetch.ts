import { request } from 'node:http';
import { Readable } from 'node:stream';

/**
 * A `fetch` over plain HTTP that opens a new connection for every request (no keep-alive), so
 * that behind a round-robin TCP proxy each request of one MCP client may reach another relay
 * replica. Enough of fetch for the MCP SDK's Streamable HTTP client.
 */
export const freshConnectionFetch: typeof fetch = (input, init = {}) =>
  new Promise<Response>((resolve, reject) => {
    const url = new URL(input instanceof Request ? input.url : input.toString());
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const method = init.method ?? 'GET';
    const signal = init.signal ?? undefined;
    const req = request(url, { method, headers, agent: false, signal }, (res) => {
      const status = res.statusCode ?? 0;
      const nullBody = status === 204 || status === 205 || status === 304;
      if (nullBody) res.resume();
      const responseHeaders = new Headers();
      for (const [name, value] of Object.entries(res.headers)) {
        for (const v of Array.isArray(value) ? value : [value ?? '']) {
          responseHeaders.append(name, v);
        }
      }
      const body = nullBody ? null : (Readable.toWeb(res) as ReadableStream);
      resolve(new Response(body, { status, headers: responseHeaders }));
    });
    req.on('error', reject);
    req.end(typeof init.body === 'string' ? init.body : undefined);
  });
