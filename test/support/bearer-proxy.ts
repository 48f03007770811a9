import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface BearerProxy {
  url: string;
  close(): Promise<void>;
}

/**
 * A plain-HTTP loopback front for the relay that adds a client's bearer token, for a client
 * that cannot send one (the MCP conformance suite's CLI). Bodies stream both ways (SSE included);
 * every other header passes as it came, Host and Origin too.
 */
export async function startBearerProxy(
  target: URL,
  token: string,
  ca: string,
): Promise<BearerProxy> {
  const server = createServer((req, res) => forward(req, res, target, token, ca));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function forward(
  req: IncomingMessage,
  res: ServerResponse,
  target: URL,
  token: string,
  ca: string,
): void {
  const upstream = request(
    {
      host: target.hostname,
      port: target.port,
      servername: target.hostname,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, authorization: `Bearer ${token}` },
      ca,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => res.destroy());
  res.on('close', () => upstream.destroy());
  req.pipe(upstream);
}
