import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { RateLimitedLog } from '../common/logging/rate-limited-log.js';
import type { WebhookReceiver } from '../config/webhook-receivers.js';
import type {
  AttemptResult,
  SenderMessage,
  SenderSetup,
  SendRequest,
} from './webhook-sender.protocol.js';

/**
 * The main thread's side of the sending thread: `send` hands it one receiver's batch and
 * resolves with each attempt's result. If the thread dies, the batches it held come back as
 * `lost` (not attempts: no retry is charged, the notices stay in the outbox and go out again),
 * the death is logged, and the next `send` starts a new thread.
 */
export class WebhookSender {
  private worker: Worker | undefined;
  private nextBatch = 0;
  private readonly waiting = new Map<
    number,
    { size: number; resolve: (results: AttemptResult[]) => void }
  >();
  private aborted = false;
  private readonly deaths: RateLimitedLog;
  private readonly logger: Logger;

  constructor(
    private readonly receivers: WebhookReceiver[],
    private readonly concurrency: number,
    private readonly timeoutMs: number,
    logger: Logger,
    /** The built file beside this one; tests give a copy built from the sources. */
    private readonly workerUrl = new URL('./webhook-sender.worker.js', import.meta.url),
  ) {
    this.logger = logger;
    this.deaths = new RateLimitedLog(logger);
  }

  send(
    receiver: string,
    notices: { eventId: string; payload: string }[],
  ): Promise<AttemptResult[]> {
    if (this.aborted) return Promise.resolve(notices.map(() => lostAttempt));
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
    this.settleAll();
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
    const worker = new Worker(this.workerUrl, {
      workerData: setup,
      env: {},
      // Its thread's name (Node 24 on Linux): `top -H` and /proc/<pid>/task/*/comm show it.
      name: 'webhook-sender',
    });
    worker.on('message', (message: SenderMessage) => {
      const waiting = this.waiting.get(message.batch);
      this.waiting.delete(message.batch);
      waiting?.resolve(message.results);
    });
    const lost = (cause: { exitCode?: number; error?: unknown }) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      // The error's name or code only: its message may hold a receiver's URL.
      const error = cause.error as { code?: unknown; name?: unknown } | undefined;
      this.deaths.warn(
        {
          exitCode: cause.exitCode,
          reason: typeof error?.code === 'string' ? error.code : error?.name,
          batches: this.waiting.size,
        },
        'plant webhook: the sending thread stopped; its notices go out again',
      );
      this.settleAll();
    };
    worker.on('error', (error) => lost({ error }));
    worker.on('exit', (exitCode) => lost({ exitCode }));
    // Never keeps the process alive on its own.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private settleAll(): void {
    for (const { size, resolve } of this.waiting.values()) {
      resolve(Array.from({ length: size }, () => lostAttempt));
    }
    this.waiting.clear();
  }
}

const lostAttempt: AttemptResult = { kind: 'lost', seconds: 0 };
