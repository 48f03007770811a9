import type { Socket } from 'node:net';
import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
  HttpException,
  HttpStatus,
  Inject,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { bodyReadToEnd } from '../http/request-body.js';
import { LOGGER } from '../logging/logger.token.js';
import { errorMessage } from './error-message.js';
import { HttpExceptionWithHeaders } from './http-exception-with-headers.js';
import { ServiceUnavailableError } from './service-unavailable.error.js';

/** The one place that formats errors (`{error, message}`); an unexpected one is a bare 500. */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const adapter = this.adapterHost.httpAdapter;

    if (exception instanceof HttpException && isHealthBody(exception.getResponse())) {
      adapter.reply(response, exception.getResponse(), exception.getStatus());
      return;
    }

    const { status, message } = this.describe(exception, request);
    if (exception instanceof HttpExceptionWithHeaders) {
      for (const [name, value] of Object.entries(exception.headers))
        response.setHeader(name, value);
    }
    if (status === 503 && !response.hasHeader('Retry-After'))
      response.setHeader('Retry-After', '5');
    // An error answered before the body was read to its end (401 before reading, 413 at the
    // first byte past 64 KiB, 408): close the connection rather than read on to keep it alive.
    if (request.complete === false && !bodyReadToEnd(request)) closeAfterAnswer(request, response);
    adapter.reply(response, { error: status, message }, status);
  }

  private describe(exception: unknown, request: Request): { status: number; message: string } {
    if (exception instanceof HttpException) {
      return { status: exception.getStatus(), message: messageOf(exception) };
    }
    if (exception instanceof ServiceUnavailableError) {
      const cause = errorMessage(exception.cause);
      this.logger.warn({ method: request.method, cause }, exception.logLine);
      return { status: HttpStatus.SERVICE_UNAVAILABLE, message: exception.answer };
    }
    this.logger.error({ err: exception, method: request.method }, 'unhandled error');
    return { status: HttpStatus.INTERNAL_SERVER_ERROR, message: 'internal server error' };
  }
}

function messageOf(exception: HttpException): string {
  const body = exception.getResponse();
  if (typeof body === 'string') return body;
  const message = (body as { message?: unknown }).message;
  if (Array.isArray(message)) return message.map(String).join('; ');
  if (typeof message === 'string') return message;
  return exception.message;
}

function isHealthBody(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'status' in body && 'details' in body;
}

/** How long, and how much, a closing connection keeps reading what the client still sends. */
const LINGER_MS = 2_000;
// Above what the two ends' socket buffers hold: bytes sent before the answer are read after it.
const LINGER_MAX_BYTES = 16 * 1024 * 1024;

// An unread body (401, 413, 408): the answer, a FIN, then up to 2 s or 16 MiB discarded, as nginx
// does. Closing at once lets the kernel's reset lose the answer; reading it all could be 10 GB.
function closeAfterAnswer(request: Request, response: Response): void {
  if (response.headersSent) return;
  response.setHeader('Connection', 'close');
  const socket = request.socket as Socket & { destroySoon?: () => void };
  // Node calls destroySoon() once an answer with `Connection: close` is written.
  socket.destroySoon = () => {
    socket.end();
    let discarded = 0;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', () => socket.destroy());
    request.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > LINGER_MAX_BYTES) socket.destroy();
    });
    request.resume();
  };
}
