/**
 * The plant webhook's sending thread: signs and POSTs each batch of notices it is given and
 * answers each attempt's outcome. Off the main thread, so the HTTP client's and the HMAC's CPU
 * runs beside the API's event loop instead of inside it (on SQLite the main thread also waits
 * out every commit's fsync, time this thread can use).
 */
import { setMaxListeners } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import type {
  AttemptResult,
  SenderSetup,
  SendRequest,
  SendResult,
  AbortRequest,
} from './webhook-sender.protocol.js';
import { WebhookPoster } from './webhook-http.js';
import { signWebhook } from './webhook-signature.js';

const setup = workerData as SenderSetup;
const abort = new AbortController();
// Each wave in progress (at most one per receiver's lane) listens to it.
setMaxListeners(0, abort.signal);
const receivers = new Map(
  setup.receivers.map((r) => [
    r.id,
    {
      poster: new WebhookPoster(new URL(r.url), setup.concurrency),
      keys: r.keys.map((key) => Buffer.from(key)),
    },
  ]),
);

async function attempt(
  receiver: { poster: WebhookPoster; keys: Buffer[] },
  notice: { eventId: string; payload: string },
  wave: { signal: AbortSignal; timedOut: () => boolean },
): Promise<AttemptResult> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    const response = await receiver.poster.post(
      {
        'content-type': 'application/json',
        'webhook-id': notice.eventId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(receiver.keys, notice.eventId, timestamp, notice.payload),
      },
      notice.payload,
      wave.signal,
    );
    if (response.status >= 200 && response.status < 300) {
      return { kind: 'delivered', status: response.status, seconds: seconds() };
    }
    if (response.status === 410) return { kind: 'gone', seconds: seconds() };
    return {
      kind: 'retry',
      error: `HTTP ${response.status}`,
      ...(response.retryAfter !== undefined && { retryAfter: response.retryAfter }),
      seconds: seconds(),
    };
  } catch (error) {
    const reason = wave.timedOut() ? `timeout after ${setup.timeoutMs / 1000} s` : reasonOf(error);
    return { kind: 'retry', error: reason, seconds: seconds() };
  }
}

/**
 * The batch's attempts in waves of `concurrency`, all of a wave started together and sharing one
 * timeout (each attempt still gets its full `timeoutMs`): one timer and one AbortController per
 * wave, not an AbortSignal.timeout and AbortSignal.any per attempt, which cost the sending
 * thread about a tenth of its time. The dispatcher's batches are one wave.
 */
async function sendBatch(
  receiver: { poster: WebhookPoster; keys: Buffer[] },
  notices: { eventId: string; payload: string }[],
): Promise<AttemptResult[]> {
  const results: AttemptResult[] = [];
  for (let start = 0; start < notices.length; start += setup.concurrency) {
    const controller = new AbortController();
    // Each request of the wave listens to it.
    setMaxListeners(setup.concurrency + 1, controller.signal);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, setup.timeoutMs);
    const stop = () => controller.abort();
    abort.signal.addEventListener('abort', stop);
    if (abort.signal.aborted) controller.abort();
    const wave = { signal: controller.signal, timedOut: () => timedOut };
    try {
      const slice = notices.slice(start, start + setup.concurrency);
      results.push(...(await Promise.all(slice.map((notice) => attempt(receiver, notice, wave)))));
    } finally {
      clearTimeout(timer);
      abort.signal.removeEventListener('abort', stop);
    }
  }
  return results;
}

/** An error's message without the URL (which may carry credentials). */
function reasonOf(error: unknown): string {
  if (typeof error !== 'object' || error === null) return 'error';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code !== 'ABORT_ERR') return code;
  const cause = (error as { cause?: { code?: string } | null }).cause;
  if (cause?.code) return cause.code;
  return error instanceof Error ? error.name : 'error';
}

parentPort!.on('message', (message: SendRequest | AbortRequest) => {
  if (message.type === 'abort') {
    abort.abort();
    for (const receiver of receivers.values()) receiver.poster.close();
    return;
  }
  const receiver = receivers.get(message.receiver);
  const done = (results: AttemptResult[]) =>
    parentPort!.postMessage({ batch: message.batch, results } satisfies SendResult);
  if (!receiver) {
    done(message.notices.map(() => ({ kind: 'retry', error: 'unknown receiver', seconds: 0 })));
    return;
  }
  // An attempt never throws (each catches its own error); should one, the batch still answers.
  void sendBatch(receiver, message.notices).then(done, () =>
    done(message.notices.map(() => ({ kind: 'lost', seconds: 0 }))),
  );
});
