/**
 * Messages between the dispatcher (main thread) and the thread that sends the notices
 * (`webhook-sender.worker.ts`). The worker holds the receivers' URLs and keys (given once, in
 * workerData, inside this process) and never touches the database.
 */

export interface SenderReceiver {
  id: string;
  url: string;
  keys: Uint8Array[];
}

export interface SenderSetup {
  receivers: SenderReceiver[];
  /** Connections per receiver, and attempts in flight at once per batch. */
  concurrency: number;
  timeoutMs: number;
}

export interface SendRequest {
  type: 'send';
  batch: number;
  receiver: string;
  notices: { eventId: string; payload: string }[];
}

/** Every attempt in flight ends (as a retry) at once: the process is stopping. */
export interface AbortRequest {
  type: 'abort';
}

export type AttemptResult =
  | { kind: 'delivered'; status: number; seconds: number }
  | { kind: 'gone'; seconds: number }
  | { kind: 'retry'; error: string; retryAfter?: string; seconds: number }
  /** Not an attempt: the sending thread stopped (or the process is stopping) before it answered. */
  | { kind: 'lost'; seconds: 0 };

export interface SendResult {
  type: 'results';
  batch: number;
  results: AttemptResult[];
}

export type SenderMessage = SendResult;
