import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from '../errors/error-body.dto.js';

const DESCRIPTIONS: Record<number, string> = {
  400: 'invalid request',
  401: 'missing or invalid bearer token',
  404: 'no such plant',
  409: 'a plant with this id already exists',
  413: 'request body larger than 64 KiB',
  415: 'request body is not application/json',
  429: 'too many requests',
  500: 'internal error',
  503: 'the database is unavailable; retry later',
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
      }),
    ),
  );
}
