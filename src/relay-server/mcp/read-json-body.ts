import type { IncomingMessage } from 'node:http';
import { BadRequestException, HttpException, HttpStatus } from '@nestjs/common';
import { DEFAULT_FRAME_LIMITS } from '../../agent-protocol/frame-codec.js';
import { HttpExceptionWithHeaders } from '../../common/errors/http-exception-with-headers.js';
import { BodyReadError, readBodyText } from '../../common/http/request-body.js';
import { assertDepthAtMost, JsonTooDeepError } from '../../common/json/lossless-json.js';
import { withExactIds } from './exact-ids.js';

export const PARSE_ERROR = Symbol('PARSE_ERROR');

/** The frame that carries a message is one level deeper, and the protocol allows 100. */
export const MAX_MESSAGE_DEPTH = DEFAULT_FRAME_LIMITS.maxDepth - 1;

/**
 * The body as JSON, read by the plant API's reader with the frame limit (413, 415, 408, 400 as
 * it says) and its depth checked on the text before parsing. PARSE_ERROR for a body that is not
 * JSON (-32700), INEXACT_ID for an id no number holds exactly (-32600).
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
  let text: string;
  try {
    text = await readBodyText(request, { maxBytes: limit });
  } catch (error) {
    if (error instanceof BodyReadError) throw new HttpException(error.message, error.status);
    throw error;
  }
  try {
    assertDepthAtMost(text, MAX_MESSAGE_DEPTH);
  } catch (error) {
    if (!(error instanceof JsonTooDeepError)) throw error;
    throw new BadRequestException(`the MCP message is too deeply nested: ${error.message}`);
  }
  let message: unknown;
  try {
    // JSON.parse, not the lossless parser: the relay forwards; only the ids it echoes itself
    // are read exactly.
    message = JSON.parse(text) as unknown;
  } catch {
    return PARSE_ERROR;
  }
  return withExactIds(message, text);
}
