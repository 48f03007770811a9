import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BodyReadError, checkBodyHeaders, MAX_BODY_BYTES, readBodyText } from './request-body.js';

/** A request stand-in: a stream with headers, as readBodyText uses an IncomingMessage. */
function fakeRequest(headers: Record<string, string>) {
  return Object.assign(new PassThrough(), { headers }) as unknown as IncomingMessage & PassThrough;
}

const statusOf = async (promise: Promise<unknown>) =>
  promise.then(
    () => 200,
    (error: unknown) => (error instanceof BodyReadError ? error.getStatus() : 500),
  );

describe('checkBodyHeaders', () => {
  it.each([
    ['application/json', undefined, undefined, 200],
    ['application/json; charset=utf-8', undefined, undefined, 200],
    ['application/json; charset=UTF8', undefined, undefined, 200],
    ['application/json; charset="utf-8"', undefined, undefined, 200],
    ['application/json; charset=latin1', undefined, undefined, 415],
    ['application/json; charset=utf-16', undefined, undefined, 415],
    // MIMEType keeps only the first parameter of a name: every charset must be UTF-8.
    ['application/json; charset=utf-8; charset=latin1', undefined, undefined, 415],
    ['application/json; charset=', undefined, undefined, 415],
    ['application/json; Charset = "UTF-8"', undefined, undefined, 200],
    ['application/json', 'gzip', undefined, 200],
    ['application/json', 'compress', undefined, 415],
    ['application/json', 'gzip, br', undefined, 415],
    ['application/json', undefined, String(MAX_BODY_BYTES), 200],
    ['application/json', undefined, String(MAX_BODY_BYTES + 1), 413],
    ['application/json', undefined, '10000000000', 413],
  ])('%s, encoding %s, length %s: %i', (type, encoding, length, status) => {
    const headers: Record<string, string> = { 'content-type': type };
    if (encoding) headers['content-encoding'] = encoding;
    if (length) headers['content-length'] = length;
    let got = 200;
    try {
      checkBodyHeaders(fakeRequest(headers));
    } catch (error) {
      got = (error as BodyReadError).getStatus();
    }
    expect(got).toBe(status);
  });
});

describe('readBodyText', () => {
  afterEach(() => vi.useRealTimers());

  it('reads UTF-8 text', async () => {
    const request = fakeRequest({ 'content-type': 'application/json' });
    const text = readBodyText(request);
    request.end(Buffer.from('{"name": "café"}'));
    expect(await text).toBe('{"name": "café"}');
  });

  it('refuses invalid UTF-8 rather than replacing it', async () => {
    const request = fakeRequest({ 'content-type': 'application/json' });
    const text = readBodyText(request);
    request.end(Buffer.from([0x22, 0xe9, 0x22]));
    expect(await statusOf(text)).toBe(400);
  });

  it('stops at the first byte past 64 KiB of a stream without Content-Length', async () => {
    const request = fakeRequest({ 'content-type': 'application/json' });
    const text = readBodyText(request);
    request.write(Buffer.alloc(MAX_BODY_BYTES, 0x20));
    request.write(Buffer.from(' '));
    expect(await statusOf(text)).toBe(413);
  });

  it('counts 64 KiB after decompression', async () => {
    const request = fakeRequest({ 'content-type': 'application/json', 'content-encoding': 'gzip' });
    const text = readBodyText(request);
    request.end(gzipSync(Buffer.alloc(MAX_BODY_BYTES + 1, 0x20)));
    expect(await statusOf(text)).toBe(413);
  });

  it('answers 408 when the body falls behind 5 s + 1 KiB/s', async () => {
    vi.useFakeTimers();
    const request = fakeRequest({ 'content-type': 'application/json' });
    const text = statusOf(readBodyText(request));
    request.write(Buffer.alloc(2048, 0x20)); // 2 KiB: the deadline moves to 5 s + 2 s
    await vi.advanceTimersByTimeAsync(6_900);
    request.write(Buffer.from(' '));
    await vi.advanceTimersByTimeAsync(200);
    expect(await text).toBe(408);
  });
});

describe('readBodyText of a body that arrived with its headers', () => {
  const arrived = (body: Buffer) => {
    const length = String(body.length);
    const request = fakeRequest({ 'content-type': 'application/json', 'content-length': length });
    request.end(body);
    return readBodyText(request);
  };

  it('reads it, and refuses it when it is not UTF-8', async () => {
    await expect(arrived(Buffer.from('{"a":"é"}'))).resolves.toBe('{"a":"é"}');
    expect(await statusOf(arrived(Buffer.from([0x22, 0xe9, 0x22])))).toBe(400);
  });

  it('takes it from the buffer when it is pushed right after the call, as Node does', async () => {
    const body = Buffer.from('{"a":1}');
    const headers = { 'content-type': 'application/json', 'content-length': String(body.length) };
    const request = fakeRequest(headers);
    const listen = vi.spyOn(request, 'on');
    const text = readBodyText(request);
    request.end(body);
    await expect(text).resolves.toBe('{"a":1}');
    expect(listen).not.toHaveBeenCalled();
  });
});

describe('readBodyText with a caller-given size limit', () => {
  it('refuses the first byte past that limit, naming it, and reads a body at it', async () => {
    const limits = { maxBytes: 1000 };
    const over = fakeRequest({ 'content-type': 'application/json' });
    const refused = readBodyText(over, limits);
    over.write(Buffer.alloc(1001, 0x20));
    await expect(refused).rejects.toMatchObject({
      status: 413,
      message: 'the request body must be at most 1000 bytes',
    });
    const at = fakeRequest({ 'content-type': 'application/json' });
    const read = readBodyText(at, limits);
    at.end(Buffer.alloc(1000, 0x20));
    expect(await read).toHaveLength(1000);
    // Headers are checked against the same limit.
    expect(() =>
      checkBodyHeaders(
        fakeRequest({ 'content-type': 'application/json', 'content-length': '1001' }),
        limits,
      ),
    ).toThrow('at most 1000 bytes');
  });
});
