import { Worker } from 'node:worker_threads';
import type { WebhookReceiver } from '../config/webhook-receivers.js';
import type {
  AttemptResult,
  SenderSetup,
  SendRequest,
  SendResult,
} from './webhook-sender.protocol.js';

/**
 * The main thread's side of the sending thread: `send` hands it one receiver's batch and
 * resolves with each attempt's result. If the thread dies, the batches it held come back as
 * retries (the notices stay in the outbox) and the next `send` starts a new one.
 */
export class WebhookSender {
  private worker: Worker | undefined;
  private nextBatch = 0;
  private readonly waiting = new Map<
    number,
    { size: number; resolve: (results: AttemptResult[]) => void }
  >();
  private aborted = false;

  constructor(
    private readonly receivers: WebhookReceiver[],
    private readonly concurrency: number,
    private readonly timeoutMs: number,
  ) {}

  send(
    receiver: string,
    notices: { eventId: string; payload: string }[],
  ): Promise<AttemptResult[]> {
    if (this.aborted) return Promise.resolve(notices.map(() => aborted));
    const worker = this.worker ?? this.start();
    const batch = this.nextBatch++;
    return new Promise((resolve) => {
      this.waiting.set(batch, { size: notices.length, resolve });
      worker.postMessage({ type: 'send', batch, receiver, notices } satisfies SendRequest);
    });
  }

  /** Ends every attempt in flight; their batches resolve (as retries). */
  abort(): void {
    this.aborted = true;
    this.worker?.postMessage({ type: 'abort' });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.settleAll('sender stopped');
    await worker?.terminate();
  }

  /** Starts the thread now (at bootstrap), not within the first request's time. */
  start(): Worker {
    if (this.worker) return this.worker;
    const setup: SenderSetup = {
      receivers: this.receivers.map((r) => ({
        id: r.id,
        url: r.url.reveal(),
        keys: r.keys.reveal().map((key) => new Uint8Array(key)),
      })),
      concurrency: this.concurrency,
      timeoutMs: this.timeoutMs,
    };
    // Built next to this file (dist/webhooks/webhook-sender.worker.js). Its environment is
    // not needed: the secrets it holds arrive in workerData, never in env or argv.
    const worker = new Worker(new URL('./webhook-sender.worker.js', import.meta.url), {
      workerData: setup,
      env: {},
    });
    worker.on('message', (message: SendResult) => {
      const waiting = this.waiting.get(message.batch);
      this.waiting.delete(message.batch);
      waiting?.resolve(message.results);
    });
    const lost = () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.settleAll('sender thread stopped');
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    // Never keeps the process alive on its own.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private settleAll(error: string): void {
    for (const { size, resolve } of this.waiting.values()) {
      resolve(Array.from({ length: size }, () => ({ kind: 'retry', error, seconds: 0 })));
    }
    this.waiting.clear();
  }
}

const aborted: AttemptResult = { kind: 'retry', error: 'stopping', seconds: 0 };
