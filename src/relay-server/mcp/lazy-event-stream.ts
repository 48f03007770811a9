import type { Response } from 'express';
import { stringifyMessage } from './json-rpc.js';

/** Streamable HTTP lets a client accept both; only then may the answer be an event stream. */
export function acceptsEventStream(request: { headers: { accept?: string } }): boolean {
  return /(^|,)\s*text\/event-stream\b/i.test(request.headers.accept ?? '');
}

/**
 * The answer to one POSTed request, as `application/json` unless the MCP server sends
 * something about the request first (progress): then it turns into a `text/event-stream`
 * carrying those notifications and, last, the response. A client that does not read its
 * stream loses progress events past `maxBufferedBytes` (progress is advisory) but never the
 * response, and the relay never buffers more than that for it.
 */
export class LazyEventStream {
  started = false;

  constructor(
    private readonly response: Response,
    private readonly maxBufferedBytes: number,
    private readonly onDrop: () => void,
  ) {}

  readonly sink = (notification: Record<string, unknown>): void => {
    if (this.response.destroyed) return;
    this.start();
    if (this.response.writableLength > this.maxBufferedBytes) {
      this.onDrop();
      return;
    }
    this.response.write(event(notification));
  };

  /** Sends the stream's headers now (a GET stream starts before it has anything to say). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.response.status(200);
    this.response.setHeader('Content-Type', 'text/event-stream');
    this.response.setHeader('Cache-Control', 'no-cache');
    this.response.flushHeaders();
  }

  finish(body: unknown): void {
    if (this.response.destroyed) return;
    if (body !== undefined) this.response.write(event(body));
    this.response.end();
  }
}

function event(message: unknown): string {
  return `event: message\ndata: ${stringifyMessage(message)}\n\n`;
}
