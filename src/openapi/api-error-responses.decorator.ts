import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from '../common/errors/error-body.dto.js';

/** A status's description and example message, where a feature says it better than the default. */
export interface ErrorResponseText {
  description?: string;
  example?: string;
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'invalid request',
  401: 'missing or invalid bearer token',
  408: 'request body slower than 5 s + 1 KiB/s',
  413: 'request body larger than 64 KiB (as sent or decompressed)',
  415: 'request body is not UTF-8 application/json',
  429: 'too many requests',
  500: 'internal error',
  503: 'the database is unavailable; retry later',
};

const EXAMPLES: Record<number, string> = {
  401: 'authentication required: send Authorization: Bearer <token>',
  408: 'the request body arrived too slowly: it must start within 5 s and keep up 1024 bytes a second',
  413: 'the request body must be at most 64 KiB',
  415: 'the request body must be application/json',
  500: 'internal server error',
  503: 'the database is unavailable; try again later',
};

/** Documents each status with the Error body, in a feature's own words where `texts` has them. */
export function ApiErrorResponses(
  statuses: number[],
  texts: Record<number, ErrorResponseText> = {},
) {
  return applyDecorators(
    ...statuses.map((status) => {
      const description = texts[status]?.description ?? DESCRIPTIONS[status] ?? 'error';
      return ApiResponse({
        status,
        description,
        type: ErrorBodyDto,
        // The schema's example says 400; each status shows its own code in Swagger UI.
        example: {
          error: status,
          message: texts[status]?.example ?? EXAMPLES[status] ?? description,
        },
      });
    }),
  );
}
