import { createSecretKey, type KeyObject } from 'node:crypto';
import { tracing } from '../common/tracing/tracing.js';
import type { WebhookConfig } from '../config/app-config.js';
import type { WebhookReceiver } from '../config/webhook-receivers.js';
import { type Answer, timedOut, WebhookPoster } from './webhook-http.js';
import type { ClaimedNotice } from './webhook-outbox.repository.js';
import { signWebhook } from './webhook-signature.js';

type Tried = { seconds: number; answerCut: boolean; status?: number };

/** An attempt's outcome: a 2xx is delivered, a 410 gone, anything else retried. */
export type Attempt =
  | (Tried & { kind: 'delivered' | 'gone' })
  | (Tried & { kind: 'retry'; error: string; retryAfter?: string | undefined })
  /** Not an attempt: the process is stopping; no retry is charged. */
  | { kind: 'aborted' };

/** Signs and POSTs notices to the configured receivers, per Standard Webhooks. */
export class WebhookSender {
  private readonly targets = new Map<string, { poster: WebhookPoster; keys: KeyObject[] }>();

  constructor(config: WebhookConfig, timeoutMs: number) {
    const limits = { ...config, timeoutMs };
    for (const receiver of config.receivers) {
      const url = new URL(receiver.url.reveal());
      this.targets.set(receiver.id, {
        poster: new WebhookPoster(url, limits),
        // KeyObjects made once: a Buffer key builds one per HMAC.
        keys: receiver.keys.reveal().map((key) => createSecretKey(key)),
      });
    }
  }

  async attempt(
    receiver: WebhookReceiver,
    notice: ClaimedNotice,
    signal: AbortSignal,
  ): Promise<Attempt> {
    const target = this.targets.get(receiver.id);
    if (!target) return { kind: 'retry', error: 'unknown receiver', seconds: 0, answerCut: false };
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const timestamp = Math.floor(Date.now() / 1000);
    const span = startAttemptSpan(receiver, notice);
    const headers = {
      'content-type': 'application/json',
      'webhook-id': notice.eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(target.keys, notice.eventId, timestamp, notice.payload),
      ...span?.carrier,
    };
    const attempt: Attempt = await target.poster.post(headers, notice.payload, signal).then(
      (answer) => attemptOf(answer, seconds()),
      (error: unknown) =>
        signal.aborted
          ? { kind: 'aborted' }
          : { kind: 'retry', error: reasonOf(error), seconds: seconds(), answerCut: false },
    );
    const status = 'status' in attempt ? { 'http.response.status_code': attempt.status } : {};
    const outcome = { 'plant_store.webhook.outcome': attempt.kind, ...status };
    span?.end(attempt.kind === 'retry' ? attempt.error : undefined, outcome);
    return attempt;
  }

  async close(): Promise<void> {
    await Promise.all([...this.targets.values()].map(({ poster }) => poster.close()));
  }
}

function attemptOf(answer: Answer, seconds: number): Attempt {
  const tried = { seconds, answerCut: answer.cut, status: answer.status };
  if (answer.status >= 200 && answer.status < 300) return { kind: 'delivered', ...tried };
  if (answer.status === 410) return { kind: 'gone', ...tried };
  return { kind: 'retry', error: `HTTP ${answer.status}`, retryAfter: answer.retryAfter, ...tried };
}

/**
 * With tracing on, an attempt as a CLIENT span in the creating request's trace, passed on in
 * `traceparent`. Receiver id and host only, never the URL or the payload.
 */
function startAttemptSpan(receiver: WebhookReceiver, notice: ClaimedNotice) {
  const parent = notice.traceContext === null ? undefined : { traceparent: notice.traceContext };
  const attributes = {
    'http.request.method': 'POST',
    'server.address': receiver.host,
    'plant_store.webhook.receiver': receiver.id,
    'plant_store.webhook.attempt': notice.attempts + 1,
  };
  return tracing()?.startClientSpan('POST', attributes, parent);
}

/** SQLSTATEs a log reader would otherwise have to look up. */
const NAMED_CODES: Record<string, string> = {
  '57014': 'statement timeout (57014)',
  '55P03': 'lock timeout (55P03)',
};

/** An error's code or name, never its message, which may hold the URL's credentials. */
export function reasonOf(error: unknown): string {
  if (error === timedOut) return 'timeout';
  if (typeof error !== 'object' || error === null) return 'error';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code !== 'ABORT_ERR') return NAMED_CODES[code] ?? code;
  if (error instanceof Error && error.message === 'Query read timeout') return 'query timeout';
  const cause = (error as { cause?: { code?: string } | null }).cause;
  if (cause?.code) return cause.code;
  return error instanceof Error ? error.name : 'error';
}

/** A receiver as logs show it: its id and host; its path may hold a token. */
export function describe(receiver: WebhookReceiver) {
  return { receiver: receiver.id, host: receiver.host };
}

/** Retry-After in seconds or as an HTTP date, cut to a day; undefined when absent or invalid. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const seconds = /^\s*(\d+)\s*$/.exec(value)?.[1];
  const ms = seconds !== undefined ? Number(seconds) * 1000 : Date.parse(value) - now;
  return Number.isNaN(ms) ? undefined : Math.min(Math.max(ms, 0), 24 * 3600_000);
}
