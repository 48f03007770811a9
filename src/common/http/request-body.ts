import type { IncomingMessage } from 'node:http';
import { MIMEType } from 'node:util';
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { HttpException } from '@nestjs/common';

/** The largest body accepted, counted both as sent and after decompression (gzip bombs). */
export const MAX_BODY_BYTES = 64 * 1024;
// The slowest body accepted: BODY_GRACE_MS to start, then BODY_MIN_BYTES_PER_SECOND on average
// (Apache mod_reqtimeout's scheme): 69 s at most for the largest body.
export const BODY_GRACE_MS = 5_000;
export const BODY_MIN_BYTES_PER_SECOND = 1024;

const DECOMPRESSORS: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** Why a body was refused: the HTTP status to answer and a message for the client. */
export class BodyReadError extends HttpException {
  constructor(status: 400 | 408 | 413 | 415, message: string) {
    super(message, status);
    this.name = 'BodyReadError';
  }
}

/** What one reader allows; the relay server passes its frame limit. */
export type BodyLimits = { maxBytes: number };

const DEFAULT_LIMITS: BodyLimits = { maxBytes: MAX_BODY_BYTES };

/** One decoder for every body: without `stream`, decode() keeps no state between calls. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

const sizeOf = (bytes: number) => (bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`);

const tooLarge = (limits: BodyLimits) =>
  new BodyReadError(413, `the request body must be at most ${sizeOf(limits.maxBytes)}`);

/** Every `charset` parameter as written: MIMEType keeps the first only and drops empty ones. */
function charsetsOf(type: string): string[] {
  if (!type.includes(';')) return []; // no parameter, no charset: the common case, no regex
  return [...type.matchAll(/;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/gi)].map(
    (match) => match[1] ?? match[2] ?? '',
  );
}

/** Refuses a charset not UTF-8, an unknown encoding, a long length; returns the encoding. */
export function checkBodyHeaders(
  request: IncomingMessage,
  limits: BodyLimits = DEFAULT_LIMITS,
): string {
  const type = request.headers['content-type'];
  if (type !== undefined) {
    try {
      new MIMEType(type);
    } catch {
      throw new BodyReadError(415, 'the request body must be application/json');
    }
    if (charsetsOf(type).some((charset) => !/^utf-?8$/i.test(charset))) {
      throw new BodyReadError(415, 'the request body must be UTF-8 (charset=utf-8 or none)');
    }
  }
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && !(encoding in DECOMPRESSORS)) {
    throw new BodyReadError(415, 'the Content-Encoding must be gzip, deflate, br or identity');
  }
  const length = Number(request.headers['content-length'] ?? 0);
  if (length > limits.maxBytes) throw tooLarge(limits);
  return encoding;
}

/** Requests whose whole body was taken before Node marked them `complete`. */
const takenWhole = new WeakSet<IncomingMessage>();

/** Whether the request's body was read to its end: nothing of it is left on the connection. */
export function bodyReadToEnd(request: IncomingMessage): boolean {
  return request.complete || takenWhole.has(request);
}

// The whole body as UTF-8 text, refused at the first byte past the limit (sent or
// decompressed) so the caller can answer at once. Bytes that are not UTF-8 are refused.
export async function readBodyText(
  request: IncomingMessage,
  limits: BodyLimits = DEFAULT_LIMITS,
): Promise<string> {
  const encoding = checkBodyHeaders(request, limits);
  // Node pushes a body that came with its headers after the 'request' handlers return, and
  // POST /plants gets here before that: a microtask later such a body is buffered whole.
  await Promise.resolve();
  const length = Number(request.headers['content-length']);
  if (encoding !== 'identity' || !(length > 0) || request.readableLength !== length) {
    return new Promise<string>((resolve, reject) => {
      new BodyReading(request, limits, encoding, resolve, reject);
    });
  }
  // All of it is buffered: taken with no listener or timer, resumed so the stream still ends.
  const body = request.read() as Buffer;
  takenWhole.add(request);
  request.resume();
  try {
    return UTF8.decode(body);
  } catch {
    throw new BodyReadError(400, 'the request body is not valid UTF-8');
  }
}

/** One body, read from construction on: both byte counts, the slow-body deadline; settles once. */
class BodyReading {
  private readonly started = Date.now();
  private readonly chunks: Buffer[] = [];
  private received = 0;
  private decoded = 0;
  private settled = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly decompressor: Transform | undefined;

  constructor(
    private readonly request: IncomingMessage,
    private readonly limits: BodyLimits,
    encoding: string,
    private readonly resolve: (text: string) => void,
    private readonly reject: (error: BodyReadError) => void,
  ) {
    this.decompressor = DECOMPRESSORS[encoding]?.();
    if (this.decompressor) {
      this.decompressor.on('data', this.keep);
      this.decompressor.on('end', this.complete);
      // zlib's own messages ("incorrect header check") describe internals, not the request.
      this.decompressor.on('error', () =>
        this.finish(new BodyReadError(400, `the request body is not valid ${encoding} data`)),
      );
    }
    this.request
      .on('data', this.onData)
      .on('end', this.onEnd)
      .on('aborted', this.onAborted)
      .on('error', this.onAborted);
    this.armTimer();
  }

  private finish(error: BodyReadError | undefined, text?: string): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.request.off('data', this.onData).off('end', this.onEnd).off('aborted', this.onAborted);
    this.request.off('error', this.onAborted);
    if (error) {
      this.request.pause();
      this.decompressor?.destroy();
      this.reject(error);
    } else {
      this.resolve(text ?? '');
    }
  }

  // One timer per body, not one per chunk: when it fires, the bytes received since it was set
  // may have earned more time, and it is set again for that time.
  private armTimer(): void {
    const earned = (this.received / BODY_MIN_BYTES_PER_SECOND) * 1000;
    const left = this.started + BODY_GRACE_MS + earned - Date.now();
    if (left > 0) {
      this.timer = setTimeout(() => this.armTimer(), left);
      return;
    }
    const message = `the request body arrived too slowly: it must start within ${BODY_GRACE_MS / 1000} s and keep up ${BODY_MIN_BYTES_PER_SECOND} bytes a second`;
    this.finish(new BodyReadError(408, message));
  }

  // The handlers are arrow properties: the same function objects are detached in finish().
  private readonly keep = (chunk: Buffer): void => {
    this.decoded += chunk.length;
    if (this.decoded > this.limits.maxBytes) this.finish(tooLarge(this.limits));
    else this.chunks.push(chunk);
  };

  private readonly complete = (): void => {
    try {
      this.finish(undefined, UTF8.decode(Buffer.concat(this.chunks)));
    } catch {
      this.finish(new BodyReadError(400, 'the request body is not valid UTF-8'));
    }
  };

  private readonly onData = (chunk: Buffer): void => {
    this.received += chunk.length;
    if (this.received > this.limits.maxBytes) return this.finish(tooLarge(this.limits));
    if (this.decompressor) this.decompressor.write(chunk);
    else this.keep(chunk);
  };

  private readonly onEnd = (): void => {
    if (this.decompressor) this.decompressor.end();
    else this.complete();
  };

  private readonly onAborted = (): void => {
    this.finish(new BodyReadError(400, 'the request body was incomplete'));
  };
}
