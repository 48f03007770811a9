import type { Response } from 'express';
import { stringifyMessage } from '../../json-rpc/json-rpc.js';
import type { StreamBudget, StreamBudgetName } from './stream-budget.js';

/** Streamable HTTP lets a client accept both; only then may the answer be an event stream. */
export function acceptsEventStream(request: { headers: { accept?: string } }): boolean {
  return /(^|,)\s*text\/event-stream\b/i.test(request.headers.accept ?? '');
}

/** One message as an SSE event, encoded once however many streams it goes to. */
export function encodeEvent(message: unknown): Buffer {
  return Buffer.from(`event: message\ndata: ${stringifyMessage(message)}\n\n`);
}

// JSON unless the server first sends progress, then SSE. Bytes the network has not taken count in
// the StreamBudget; an event past a budget is not written, and `onOver` decides the rest.
export class LazyEventStream {
  started = false;
  private held = 0;
  private closed = false;

  constructor(
    private readonly response: Response,
    private readonly budget: StreamBudget,
    private readonly client: string,
    private readonly onOver: (budget: StreamBudgetName) => void,
  ) {
    response.once('close', () => {
      this.closed = true;
      this.budget.release(this.client, this.held);
      this.held = 0;
    });
  }

  readonly sink = (notification: Record<string, unknown>): void => {
    this.send(encodeEvent(notification));
  };

  send(event: Buffer): void {
    if (this.response.destroyed) return;
    this.start();
    const over = this.budget.take(this.client, this.held, event.length);
    if (over === undefined) this.write(event);
    else this.onOver(over);
  }

  private write(event: Buffer): void {
    this.held += event.length;
    this.response.write(event, () => {
      // After 'close' the budget has it back already.
      if (this.closed) return;
      this.held -= event.length;
      this.budget.release(this.client, event.length);
    });
  }

  /** Sends the stream's headers now (a GET stream starts before it has anything to say). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.response.status(200);
    this.response.setHeader('Content-Type', 'text/event-stream');
    this.response.setHeader('Cache-Control', 'no-cache');
    this.response.flushHeaders();
  }

  /** Ends the stream with the answer's event, if any: always written, and counted (false: gone). */
  end(event?: Buffer): boolean {
    if (this.response.destroyed) return false;
    this.start();
    if (event) {
      this.budget.charge(this.client, event.length);
      this.write(event);
    }
    this.response.end();
    return true;
  }
}
