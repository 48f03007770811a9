import {
  BadRequestException,
  NotFoundException,
  ServiceUnavailableException,
} from '@nestjs/common';
import type { ArgumentsHost } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import type { Logger } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { AllExceptionsFilter } from './all-exceptions.filter.js';
import { BearerChallengeException } from './bearer-challenge.exception.js';
import { HttpExceptionWithHeaders } from './http-exception-with-headers.js';
import { ServiceUnavailableError } from './service-unavailable.error.js';

/** A dependency's outage, as a feature reports it (DatabaseUnavailableError is one). */
class StoreDown extends ServiceUnavailableError {
  readonly answer = 'the store is unavailable; try again later';
  readonly logLine = 'store unavailable';
}

/** Runs the filter on one exception and returns what it answered. */
function answer(exception: unknown) {
  const replies: { body: unknown; status: number }[] = [];
  const headers: Record<string, string> = {};
  const adapterHost = {
    httpAdapter: {
      reply: (_res: unknown, body: unknown, status: number) => replies.push({ body, status }),
    },
  } as unknown as HttpAdapterHost;
  const logger = { warn: vi.fn(), error: vi.fn() };
  const host = {
    switchToHttp: () => ({
      getRequest: () => ({ method: 'POST' }),
      getResponse: () => ({
        setHeader: (name: string, value: string) => (headers[name] = value),
        hasHeader: (name: string) => name in headers,
      }),
    }),
  } as unknown as ArgumentsHost;
  new AllExceptionsFilter(adapterHost, logger as unknown as Logger).catch(exception, host);
  return { ...replies[0]!, headers, logger };
}

describe('AllExceptionsFilter', () => {
  it('answers an unexpected error with a bare 500 and logs it', () => {
    const error = new Error('relation "plants" does not exist at SELECT * FROM plants');
    const result = answer(error);
    expect(result.status).toBe(500);
    expect(result.body).toEqual({ error: 500, message: 'internal server error' });
    expect(JSON.stringify(result.body)).not.toMatch(/plants|SELECT|at /);
    expect(result.logger.error).toHaveBeenCalledOnce();
  });

  it('answers anything thrown that is not an Error with a 500 too', () => {
    expect(answer('boom').body).toEqual({ error: 500, message: 'internal server error' });
  });

  it('joins validation messages', () => {
    const result = answer(new BadRequestException(['name must be a string', 'id is required']));
    expect(result.body).toEqual({ error: 400, message: 'name must be a string; id is required' });
  });

  it('keeps an HttpException message and status', () => {
    expect(answer(new NotFoundException('no plant with id 7')).body).toEqual({
      error: 404,
      message: 'no plant with id 7',
    });
  });

  it('answers 503 with Retry-After for an unavailable dependency, without its cause', () => {
    const result = answer(
      new StoreDown('x', { cause: new Error('connect ECONNREFUSED 10.0.0.5:5432') }),
    );
    expect(result.status).toBe(503);
    expect(result.body).toEqual({
      error: 503,
      message: 'the store is unavailable; try again later',
    });
    expect(result.headers['Retry-After']).toBe('5');
    expect(JSON.stringify(result.body)).not.toContain('10.0.0.5');
  });

  it("keeps a 503's own Retry-After", () => {
    const result = answer(
      new HttpExceptionWithHeaders(503, 'the IdP is down', { 'Retry-After': '30' }),
    );
    expect(result.headers['Retry-After']).toBe('30');
  });

  it('sets the challenge header of a 401', () => {
    const result = answer(
      new BearerChallengeException('authentication required', 'Bearer realm="x"'),
    );
    expect(result.status).toBe(401);
    expect(result.headers['WWW-Authenticate']).toBe('Bearer realm="x"');
  });

  it("leaves Terminus's health body as it is", () => {
    const body = {
      status: 'error',
      info: {},
      error: { database: { status: 'down' } },
      details: {},
    };
    const result = answer(new ServiceUnavailableException(body));
    expect(result.status).toBe(503);
    expect(result.body).toEqual(body);
  });
});
