import type { ErrorResponseText } from '../openapi/api-error-responses.decorator.js';

/** How the plants API words its error responses in the OpenAPI document. */
export const PLANT_ERROR_TEXTS: Record<number, ErrorResponseText> = {
  400: { example: 'name must be at most 256 characters' },
  404: { description: 'no such plant', example: 'no plant with id 10' },
  409: {
    description: 'a plant with this id already exists',
    example: 'a plant with id 10 already exists',
  },
};
