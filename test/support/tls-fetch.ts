import { request } from 'node:https';
import { Readable } from 'node:stream';

/**
 * A `fetch` that trusts one extra CA, for clients inside the test process: Node reads
 * NODE_EXTRA_CA_CERTS only at start, and the test CA is made later. Enough of fetch for the
 * MCP SDK's Streamable HTTP client (method, headers, string body, abort; a streamed body).
 */
export function fetchTrusting(ca: string): typeof fetch {
  return (input, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : input.toString());
      const headers = Object.fromEntries(new Headers(init.headers).entries());
      const req = request(
        url,
        { method: init.method ?? 'GET', headers, ca, signal: init.signal ?? undefined },
        (res) => {
          const status = res.statusCode ?? 0;
          const nullBody = status === 204 || status === 205 || status === 304;
          if (nullBody) res.resume();
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            for (const v of Array.isArray(value) ? value : [value ?? ''])
              responseHeaders.append(name, v);
          }
          resolve(
            new Response(nullBody ? null : (Readable.toWeb(res) as ReadableStream), {
              status,
              headers: responseHeaders,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(typeof init.body === 'string' ? init.body : undefined);
    });
}
