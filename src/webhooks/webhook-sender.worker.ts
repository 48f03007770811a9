/**
 * The plant webhook's sending thread: signs and POSTs each batch of notices it is given and
 * answers each attempt's outcome. Off the main thread, so the HTTP client's and the HMAC's CPU
 * runs beside the API's event loop instead of inside it (on SQLite the main thread also waits
 * out every commit's fsync, time this thread can use).
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import type {
  AttemptResult,
  SenderSetup,
  SenderMessage,
  SendRequest,
  AbortRequest,
} from './webhook-sender.protocol.js';
import { RequestGroup, WebhookPoster } from './webhook-http.js';
import { signWebhook } from './webhook-signature.js';

const setup = workerData as SenderSetup;
const post = (message: SenderMessage) => parentPort!.postMessage(message);
/** Every wave in progress (at most one per receiver's lane), cut at once when the process stops. */
const waves = new Set<RequestGroup>();
let stopping = false;

interface Receiver {
  poster: WebhookPoster;
  /**
   * KeyObjects made once: createHmac with a Buffer key builds one per call, 13 us on Node 24
   * against 2 us with a KeyObject (a quarter of this thread's time per notice).
   */
  keys: KeyObject[];
}

const receivers = new Map<string, Receiver>(
  setup.receivers.map((r) => [
    r.id,
    {
      poster: new WebhookPoster(new URL(r.url), setup.concurrency),
      keys: r.keys.map((key) => createSecretKey(key)),
    },
  ]),
);

async function attempt(
  receiver: Receiver,
  notice: { eventId: string; payload: string },
  wave: RequestGroup,
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
      wave,
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
    const reason =
      error === timedOut ? `timeout after ${setup.timeoutMs / 1000} s` : reasonOf(error);
    return { kind: 'retry', error: reason, seconds: seconds() };
  }
}

/** What a wave's requests fail with when its timeout cuts them. */
const timedOut = Object.assign(new Error('the attempt timed out'), { name: 'TimeoutError' });
/** What they fail with when the process stops. */
const aborted = Object.assign(new Error('the process is stopping'), { name: 'AbortError' });

/**
 * The batch's attempts in waves of `concurrency`, all of a wave started together and sharing one
 * timeout (each attempt still gets its full `timeoutMs`): one timer and one RequestGroup per
 * wave, not a timeout signal per attempt. The dispatcher's batches are one wave.
 */
async function sendBatch(
  receiver: Receiver,
  notices: { eventId: string; payload: string }[],
): Promise<AttemptResult[]> {
  const results: AttemptResult[] = [];
  for (let start = 0; start < notices.length; start += setup.concurrency) {
    const wave = new RequestGroup();
    if (stopping) wave.cutAll(aborted);
    const timer = setTimeout(() => wave.cutAll(timedOut), setup.timeoutMs);
    waves.add(wave);
    try {
      const slice = notices.slice(start, start + setup.concurrency);
      results.push(...(await Promise.all(slice.map((notice) => attempt(receiver, notice, wave)))));
    } finally {
      clearTimeout(timer);
      waves.delete(wave);
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
    stopping = true;
    for (const wave of waves) wave.cutAll(aborted);
    for (const receiver of receivers.values()) receiver.poster.close();
    return;
  }
  const receiver = receivers.get(message.receiver);
  const done = (results: AttemptResult[]) =>
    post({ type: 'results', batch: message.batch, results });
  if (!receiver) {
    done(message.notices.map(() => ({ kind: 'retry', error: 'unknown receiver', seconds: 0 })));
    return;
  }
  // An attempt never throws (each catches its own error); should one, the batch still answers.
  void sendBatch(receiver, message.notices).then(done, () =>
    done(message.notices.map(() => ({ kind: 'lost', seconds: 0 }))),
  );
});
