import type { IncomingMessage } from 'node:http';
import { HttpStatus, PayloadTooLargeException } from '@nestjs/common';
import { HttpExceptionWithHeaders } from '../../common/errors/http-exception-with-headers.js';

export const PARSE_ERROR = Symbol('PARSE_ERROR');

/**
 * The request body as JSON, read with a byte limit (413 past it, without buffering the rest).
 * Returns PARSE_ERROR for a body that is not JSON, so the caller can answer JSON-RPC's -32700.
 */
export async function readJsonBody(request: IncomingMessage, limit: number): Promise<unknown> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new HttpExceptionWithHeaders(
      HttpStatus.UNSUPPORTED_MEDIA_TYPE,
      'MCP messages are sent as Content-Type: application/json',
      {},
    );
  }
  const tooLarge = () =>
    new PayloadTooLargeException(`the request body is larger than ${limit} bytes`);
  if (Number(request.headers['content-length'] ?? 0) > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return PARSE_ERROR;
  }
}
