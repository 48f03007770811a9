import {
  BadRequestException,
  type CanActivate,
  type ExecutionContext,
  HttpException,
  Injectable,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import type { Request } from 'express';
import { JsonTooDeepError, parseJson } from '../json/lossless-json.js';
import { BodyReadError, readBodyText } from './request-body.js';

const JSON_TYPES = ['application/json', 'application/*+json'];

/**
 * Request bodies: JSON only (415 otherwise), UTF-8 only, at most 64 KiB, at a minimum rate,
 * parsed losslessly so int64 ids arrive exact (see request-body.ts for the limits).
 *
 * Not a middleware, on purpose: it runs after the middleware (the rate limit has counted the
 * request) and after the bearer guard (the token is checked) before a single body byte is read,
 * and before the pipes validate the body. Nest's own body parser is off (`bodyParser: false` in
 * main.ts).
 *
 * A guard that always lets the request through (or throws the body's 4xx), not an interceptor:
 * one global interceptor puts every request of the API through Nest's rxjs interceptor chain
 * (defer, mergeAll, an AsyncResource per request), ~20 us of each GET's CPU in a CPU profile
 * (`npm run bench -- --profile`), while guards are plain awaited calls. Global guards run in the
 * order they are registered: AuthModule registers this one right after BearerGuard. Nest puts
 * request-scoped global guards after the static ones, so both must stay singletons (they are);
 * `http-limits.e2e-spec.ts` pins the order (401, not 413, to a huge body without a token). A
 * guard on a controller or route runs after this one, with the body already read.
 */
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
