import type { IncomingMessage } from 'node:http';
import { BadRequestException, HttpException, HttpStatus } from '@nestjs/common';
import { DEFAULT_FRAME_LIMITS } from '../../agent-protocol/frame-codec.js';
import { readBodyText } from '../../common/http/request-body.js';
import { assertDepthAtMost, JsonTooDeepError } from '../../common/json/lossless-json.js';
import { JsonRpcCode, jsonRpcError } from '../json-rpc/json-rpc.js';
import { INEXACT_ID, withExactIds } from './sessions/exact-ids.js';
import { invalidRequest, type RelayAnswer } from './sessions/relay-target.js';

/** A body the relay answers 400 itself, with a JSON-RPC error: there is no message to pass on. */
export class InvalidBody {
  constructor(readonly answer: RelayAnswer) {}
}

/** The frame that carries a message is one level deeper, and the protocol allows 100. */
const MAX_MESSAGE_DEPTH = DEFAULT_FRAME_LIMITS.maxDepth - 1;

// The plant API's reader (413, 415, 408, 400) with the frame limit, and depth checked on the text
// before parsing; InvalidBody when not JSON (-32700) or an id no number holds exactly (-32600).
export async function readJsonBody(request: IncomingMessage, limit: number): Promise<unknown> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    const needed = 'MCP messages are sent as Content-Type: application/json';
    throw new HttpException(needed, HttpStatus.UNSUPPORTED_MEDIA_TYPE);
  }
  let text: string;
  try {
    text = await readBodyText(request, { maxBytes: limit });
    assertDepthAtMost(text, MAX_MESSAGE_DEPTH);
  } catch (error) {
    if (error instanceof JsonTooDeepError) {
      throw new BadRequestException(`the MCP message is too deeply nested: ${error.message}`);
    }
    throw error;
  }
  let message: unknown;
  try {
    // JSON.parse, not the lossless parser: the relay forwards; the ids it echoes are exact.
    message = JSON.parse(text) as unknown;
  } catch {
    const notJson = jsonRpcError(null, JsonRpcCode.ParseError, 'the body is not valid JSON');
    return new InvalidBody({ status: 400, body: notJson });
  }
  const exact = withExactIds(message, text);
  if (exact !== INEXACT_ID) return exact;
  const inexact =
    'a numeric id must be an integer or a number a double holds exactly: send it as a string';
  return new InvalidBody(invalidRequest(null, inexact));
}
