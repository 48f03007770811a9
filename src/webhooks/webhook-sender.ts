import { createSecretKey, type KeyObject } from 'node:crypto';
import { tracing } from '../common/tracing/tracing.js';
import type { WebhookConfig, WebhookReceiver } from '../config/webhook-receivers.js';
import { timedOut, WebhookPoster } from './webhook-http.js';
import type { ClaimedNotice } from './webhook-outbox.repository.js';
import { signWebhook } from './webhook-signature.js';

export type Attempt =
  | { kind: 'delivered' | 'gone'; seconds: number; answerCut: boolean; status?: number }
  | {
      kind: 'retry';
      error: string;
      retryAfter?: string | undefined;
      seconds: number;
      answerCut: boolean;
      status?: number;
    }
  /** Not an attempt: the process is stopping; no retry is charged. */
  | { kind: 'aborted' };

/** Signs and POSTs notices to the configured receivers, per Standard Webhooks. */
export class WebhookSender {
  private readonly targets = new Map<
    string,
    { poster: WebhookPoster; keys: KeyObject[]; host: string }
  >();

  constructor(config: WebhookConfig, timeoutMs: number) {
    const { maxInFlightPerReceiver: maxSockets, maxAnswerBytes } = config;
    for (const receiver of config.receivers) {
      const url = new URL(receiver.url.reveal());
      this.targets.set(receiver.id, {
        poster: new WebhookPoster(url, { maxSockets, maxAnswerBytes, timeoutMs }),
        // KeyObjects made once: a Buffer key builds one per HMAC.
        keys: receiver.keys.reveal().map((key) => createSecretKey(key)),
        host: receiver.host,
      });
    }
  }

  async attempt(receiver: string, notice: ClaimedNotice, signal: AbortSignal): Promise<Attempt> {
    const target = this.targets.get(receiver);
    if (!target) return { kind: 'retry', error: 'unknown receiver', seconds: 0, answerCut: false };
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const timestamp = Math.floor(Date.now() / 1000);
    const span = startAttemptSpan(receiver, target.host, notice);
    const headers = {
      'content-type': 'application/json',
      'webhook-id': notice.eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(target.keys, notice.eventId, timestamp, notice.payload),
      ...span?.headers,
    };
    const attempt = await this.post(target.poster, headers, notice.payload, signal, seconds);
    span?.end(attempt);
    return attempt;
  }

  private async post(
    poster: WebhookPoster,
    headers: Record<string, string>,
    payload: string,
    signal: AbortSignal,
    seconds: () => number,
  ): Promise<Attempt> {
    try {
      const answer = await poster.post(headers, payload, signal);
      const common = { seconds: seconds(), answerCut: answer.cut, status: answer.status };
      if (answer.status >= 200 && answer.status < 300) return { kind: 'delivered', ...common };
      if (answer.status === 410) return { kind: 'gone', ...common };
      return {
        kind: 'retry',
        error: `HTTP ${answer.status}`,
        retryAfter: answer.retryAfter,
        ...common,
      };
    } catch (error) {
      if (signal.aborted) return { kind: 'aborted' };
      return { kind: 'retry', error: reasonOf(error), seconds: seconds(), answerCut: false };
    }
  }

  close(): void {
    for (const { poster } of this.targets.values()) poster.close();
  }
}

/**
 * With tracing on, one attempt as an HTTP CLIENT span, a child of the request that created the
 * notice; its `traceparent` header lets the receiver continue the trace. Receiver id and host
 * only: never the URL (it may carry credentials) nor the payload.
 */
function startAttemptSpan(receiver: string, host: string, notice: ClaimedNotice) {
  const otel = tracing();
  if (!otel) return undefined;
  const parent = otel.contextFrom(
    notice.traceContext === null ? undefined : { traceparent: notice.traceContext },
  );
  const span = otel.startSpan(
    'POST',
    otel.SpanKind.CLIENT,
    {
      'http.request.method': 'POST',
      'server.address': host,
      'plant_store.webhook.receiver': receiver,
      'plant_store.webhook.attempt': notice.attempts + 1,
    },
    parent,
  );
  const headers: Record<string, string> = {};
  const carrier = otel.carrierOf(span);
  if (carrier.traceparent) headers.traceparent = carrier.traceparent;
  if (carrier.tracestate) headers.tracestate = carrier.tracestate;
  return {
    headers,
    end(attempt: Attempt) {
      span.setAttribute('plant_store.webhook.outcome', attempt.kind);
      if ('status' in attempt && attempt.status !== undefined) {
        span.setAttribute('http.response.status_code', attempt.status);
      }
      otel.endSpan(span, attempt.kind === 'retry' ? attempt.error : undefined);
    },
  };
}

/** An error's code or name, never its message (which may hold the URL and its credentials). */
export function reasonOf(error: unknown): string {
  if (error === timedOut) return 'timeout';
  if (typeof error !== 'object' || error === null) return 'error';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code !== 'ABORT_ERR') return code;
  const cause = (error as { cause?: { code?: string } | null }).cause;
  if (cause?.code) return cause.code;
  return error instanceof Error ? error.name : 'error';
}

/** A receiver as logs and /health show it: its id, host and path, never its URL's secrets. */
export function describe(receiver: WebhookReceiver) {
  return { receiver: receiver.id, host: receiver.host, path: receiver.path };
}

/** Retry-After in seconds or as an HTTP date, cut to a day; undefined when absent or invalid. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const seconds = /^\s*(\d+)\s*$/.exec(value)?.[1];
  const ms = seconds !== undefined ? Number(seconds) * 1000 : Date.parse(value) - now;
  return Number.isNaN(ms) ? undefined : Math.min(Math.max(ms, 0), 24 * 3600_000);
}
