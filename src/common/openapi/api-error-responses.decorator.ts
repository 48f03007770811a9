import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from '../errors/error-body.dto.js';

const DESCRIPTIONS: Record<number, string> = {
  400: 'invalid request',
  401: 'missing or invalid bearer token',
  404: 'no such plant',
  408: 'request body slower than 5 s + 1 KiB/s',
  409: 'a plant with this id already exists',
  413: 'request body larger than 64 KiB (as sent or decompressed)',
  415: 'request body is not UTF-8 application/json',
  429: 'too many requests',
  500: 'internal error',
  503: 'the database is unavailable; retry later',
};

const EXAMPLES: Record<number, string> = {
  400: 'name must be at most 256 characters',
  401: 'authentication required: send Authorization: Bearer <token>',
  404: 'no plant with id 10',
  408: 'the request body arrived too slowly: it must start within 5 s and keep up 1024 bytes a second',
  409: 'a plant with id 10 already exists',
  413: 'the request body must be at most 64 KiB',
  415: 'the request body must be application/json',
  500: 'internal server error',
  503: 'the database is unavailable; try again later',
};

/**
 * Documents each listed status with the Error body. `overrides` sets a description, e.g. the
 * seed's "unexpected error" for POST /plants' 400.
 */
export function ApiErrorResponses(statuses: number[], overrides: Record<number, string> = {}) {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: overrides[status] ?? DESCRIPTIONS[status] ?? 'error',
        type: ErrorBodyDto,
        // The schema's example says 400; each status shows its own code in Swagger UI.
        example: { error: status, message: EXAMPLES[status] ?? DESCRIPTIONS[status] ?? 'error' },
      }),
    ),
  );
}
