import {
  BadRequestException,
  Injectable,
  PayloadTooLargeException,
  UnsupportedMediaTypeException,
  type NestMiddleware,
} from '@nestjs/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import { parseJson } from '../json/lossless-json.js';

export const MAX_BODY_BYTES = 64 * 1024;
const JSON_TYPES = ['application/json', 'application/*+json'];
const readText = express.text({ type: JSON_TYPES, limit: MAX_BODY_BYTES });

/**
 * Request bodies: JSON only (415 otherwise), at most 64 KiB (413), parsed losslessly so int64
 * ids arrive exact. Nest's own body parser is off (`bodyParser: false` in main.ts).
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  use(request: Request, response: Response, next: NextFunction): void {
    const hasBody =
      request.headers['transfer-encoding'] !== undefined ||
      (request.headers['content-length'] !== undefined &&
        request.headers['content-length'] !== '0');
    if (!hasBody) {
      next();
      return;
    }
    if (!request.is(JSON_TYPES)) {
      next(new UnsupportedMediaTypeException('the request body must be application/json'));
      return;
    }
    readText(request, response, (error?: unknown) => {
      if (error) {
        next(translateBodyError(error));
        return;
      }
      const text: unknown = request.body;
      if (typeof text !== 'string' || text.trim() === '') {
        next(new BadRequestException('the request body must be a JSON object'));
        return;
      }
      try {
        request.body = parseJson(text);
      } catch (parseError) {
        const detail = parseError instanceof Error ? parseError.message : 'unreadable';
        next(new BadRequestException(`the request body is not valid JSON: ${detail}`));
        return;
      }
      next();
    });
  }
}

function translateBodyError(error: unknown): unknown {
  const type = (error as { type?: string }).type;
  if (type === 'entity.too.large') {
    return new PayloadTooLargeException(
      `the request body must be at most ${MAX_BODY_BYTES / 1024} KiB`,
    );
  }
  if (type === 'charset.unsupported' || type === 'encoding.unsupported') {
    return new UnsupportedMediaTypeException('the request body must be UTF-8 encoded JSON');
  }
  if (type === 'request.aborted' || type === 'request.size.invalid') {
    return new BadRequestException('the request body was incomplete');
  }
  return error;
}
