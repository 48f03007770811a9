import {
  BadRequestException,
  type CanActivate,
  type ExecutionContext,
  Injectable,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import type { Request } from 'express';
import { JsonTooDeepError, parseJson } from '../json/lossless-json.js';
import { readBodyText } from './request-body.js';

const JSON_TYPES = ['application/json', 'application/*+json'];

// After BearerGuard: no body byte is read before the token check (an e2e test pins 401, not 413).
// A guard: an interceptor's rxjs cost ~20 us. Keep both singletons: request-scoped guards run last.
@Injectable()
export class JsonBodyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    if (!hasBody(request)) return true;
    return readJsonBody(request).then((body) => {
      request.body = body;
      return true;
    });
  }
}

function hasBody(request: Request): boolean {
  return (
    request.headers['transfer-encoding'] !== undefined ||
    (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0')
  );
}

async function readJsonBody(request: Request): Promise<unknown> {
  if (!request.is(JSON_TYPES)) {
    throw new UnsupportedMediaTypeException('the request body must be application/json');
  }
  const text = await readBodyText(request);
  if (text.trim() === '') throw new BadRequestException('the request body must be a JSON object');
  try {
    return parseJson(text);
  } catch (error) {
    if (error instanceof JsonTooDeepError) {
      throw new BadRequestException(`the request body is too deeply nested: ${error.message}`);
    }
    const detail = error instanceof Error ? error.message : 'unreadable';
    throw new BadRequestException(`the request body is not valid JSON: ${detail}`);
  }
}
