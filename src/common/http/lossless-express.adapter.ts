import { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
import { stringifyJson } from '../json/lossless-json.js';

/**
 * Express with the service's response rules in one place: JSON bodies written by the lossless
 * serializer (bigint ids as bare numbers; Express's res.json would throw, nestjs/nest#6919),
 * no X-Powered-By, no ETag computation on every response.
 */
export class LosslessExpressAdapter extends ExpressAdapter {
  constructor() {
    super();
    const app = this.getInstance<import('express').Express>();
    app.disable('x-powered-by');
    app.disable('etag');
  }

  override reply(response: Response, body: unknown, statusCode?: number): Response {
    if (statusCode) response.status(statusCode);
    if (body === undefined || body === null || response.statusCode === 204) {
      return response.end();
    }
    if (typeof body === 'object' && !Buffer.isBuffer(body) && !('pipe' in body)) {
      response.setHeader('Content-Type', 'application/json; charset=utf-8');
      return response.end(stringifyJson(body));
    }
    return super.reply(response, body, statusCode) as Response;
  }
}
