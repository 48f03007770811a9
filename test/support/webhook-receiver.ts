import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** What a receiver does with a request; the default answers 200. */
export type Behaviour = (request: IncomingMessage, response: ServerResponse) => void;

export interface Delivery {
  id: string;
  body: string;
}

/**
 * A real webhook receiver on loopback. Every request is verified with the Standard Webhooks
 * reference implementation (npm standardwebhooks) before `behaviour` answers it; a request that
 * does not verify is recorded in `rejected` and answered 400.
 */
export class WebhookReceiver {
  /** Verified requests, in arrival order (retries included). */
  readonly deliveries: Delivery[] = [];
  readonly rejected: string[] = [];
  behaviour: Behaviour = (_request, response) => response.writeHead(200).end();
  private readonly server: Server;
  private readonly verifier: Webhook;

  /** A receiver that comes back on the same port keeps its secret: pass the old one. */
  constructor(readonly secret = `whsec_${randomBytes(32).toString('base64')}`) {
    this.verifier = new Webhook(secret);
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        try {
          this.verifier.verify(body, request.headers as Record<string, string>);
        } catch (error) {
          this.rejected.push(String(error));
          response.writeHead(400).end();
          return;
        }
        if (request.headers['content-type'] !== 'application/json') {
          this.rejected.push(`content-type ${request.headers['content-type']}`);
        }
        this.deliveries.push({ id: String(request.headers['webhook-id']), body });
        this.behaviour(request, response);
      });
    });
  }

  async listen(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/plant/webhook`;
  }

  /** Bodies of distinct events (deduplicated by webhook-id, as a receiver must). */
  distinctBodies(): string[] {
    const seen = new Map<string, string>();
    for (const d of this.deliveries) if (!seen.has(d.id)) seen.set(d.id, d.body);
    return [...seen.values()];
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls `condition` every 50 ms until it holds, or fails after `timeoutMs` with `what`. */
export async function waitFor(
  what: string,
  condition: () => boolean,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
