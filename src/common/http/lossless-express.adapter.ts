import { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
import { stringifyJson } from '../json/lossless-json.js';

/** Express with lossless JSON (bigint ids, where res.json throws), no X-Powered-By, no ETag. */
export class LosslessExpressAdapter extends ExpressAdapter {
  constructor() {
    super();
    const app = this.getInstance<import('express').Express>();
    app.disable('x-powered-by');
    app.disable('etag');
  }

  override reply(response: Response, body: unknown, statusCode?: number): Response {
    if (statusCode) response.status(statusCode);
    if (body === undefined || body === null || response.statusCode === 204) return response.end();
    if (typeof body === 'object' && !Buffer.isBuffer(body) && !('pipe' in body)) {
      response.setHeader('Content-Type', 'application/json; charset=utf-8');
      return response.end(stringifyJson(body));
    }
    return super.reply(response, body, statusCode) as Response;
  }
}
