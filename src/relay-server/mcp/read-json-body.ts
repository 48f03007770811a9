import type { IncomingMessage } from 'node:http';
import { BadRequestException, HttpException, HttpStatus } from '@nestjs/common';
import { DEFAULT_FRAME_LIMITS } from '../../agent-protocol/frame-codec.js';
import { HttpExceptionWithHeaders } from '../../common/errors/http-exception-with-headers.js';
import { BodyReadError, readBodyText } from '../../common/http/request-body.js';
import { assertDepthAtMost, JsonTooDeepError } from '../../common/json/lossless-json.js';
import { withExactIds } from './exact-ids.js';

export const PARSE_ERROR = Symbol('PARSE_ERROR');

/**
 * How deep a client's message may nest: the frame that carries it to the agent is one level
 * more, and the protocol allows 100 (docs/agent-protocol.md, "Limits"). Checked on the text,
 * before parsing, so nothing deeper is ever built in memory or stringified.
 */
export const MAX_MESSAGE_DEPTH = DEFAULT_FRAME_LIMITS.maxDepth - 1;

/**
 * The request body as JSON, read by the plant API's reader (common/http/request-body.ts) with
 * the frame limit as its size: 413 past it (without buffering the rest), 415 for a charset
 * other than UTF-8 or an unknown Content-Encoding, 408 for a body slower than 1 KiB/s after
 * 5 s, 400 for bytes that are not UTF-8 or nesting past MAX_MESSAGE_DEPTH. Returns PARSE_ERROR
 * for a body that is not JSON, so the caller can answer JSON-RPC's -32700, and INEXACT_ID for
 * an id no number holds exactly (-32600).
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
    // JSON.parse, not the plant API's lossless parser: the relay forwards, it does not
    // interpret, and the agent end encodes frames with JSON.stringify (no bigint). Only the
    // ids the relay echoes itself are read exactly.
    message = JSON.parse(text) as unknown;
  } catch {
    return PARSE_ERROR;
  }
  return withExactIds(message, text);
}
