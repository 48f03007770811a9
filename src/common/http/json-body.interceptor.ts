import {
  BadRequestException,
  type CallHandler,
  type ExecutionContext,
  HttpException,
  Injectable,
  type NestInterceptor,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import type { Request } from 'express';
import { from, type Observable, switchMap } from 'rxjs';
import { JsonTooDeepError, parseJson } from '../json/lossless-json.js';
import { BodyReadError, readBodyText } from './request-body.js';

const JSON_TYPES = ['application/json', 'application/*+json'];

/**
 * Request bodies: JSON only (415 otherwise), UTF-8 only, at most 64 KiB, at a minimum rate,
 * parsed losslessly so int64 ids arrive exact (see request-body.ts for the limits).
 *
 * An interceptor, not a middleware, on purpose: interceptors run after the middleware (the
 * rate limit has counted the request) and the guards (the bearer token is checked) before a
 * single body byte is read. Nest's own body parser is off (`bodyParser: false` in main.ts).
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    if (!hasBody(request)) return next.handle();
    return from(readJsonBody(request)).pipe(
      switchMap((body) => {
        request.body = body;
        return next.handle();
      }),
    );
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
  let text: string;
  try {
    text = await readBodyText(request);
  } catch (error) {
    if (error instanceof BodyReadError) throw new HttpException(error.message, error.status);
    throw error;
  }
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
