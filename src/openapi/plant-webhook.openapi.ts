import type { PathItemObject } from '@nestjs/swagger';

/** The webhook's name, the upstream Plant Store document's. */
export const PLANT_WEBHOOK = '/plant/webhook';

/**
 * The upstream document's webhook, with the Standard Webhooks headers; written by hand, as no
 * route serves it. Headers and body are not `required`, as upstream: oasdiff would count a
 * required one as breaking for receivers generated from the upstream document.
 */
export const plantWebhook: PathItemObject = {
  post: {
    operationId: 'plantAdded',
    summary: 'A plant was added to the store',
    description:
      'Information about a new plant added to the store, sent to each receiver the operator ' +
      'configured and signed per Standard Webhooks 1.0 (https://www.standardwebhooks.com): ' +
      'verify `webhook-signature` over `<webhook-id>.<webhook-timestamp>.<body>` with the ' +
      "receiver's `whsec_` secret, refuse old timestamps, and drop a `webhook-id` already seen: " +
      'a notice may arrive more than once.',
    parameters: [
      {
        name: 'webhook-id',
        in: 'header',
        description: 'Always sent. Unique per event, the same on every retry: deduplicate on it.',
        schema: { type: 'string', example: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W' },
      },
      {
        name: 'webhook-timestamp',
        in: 'header',
        description: 'Always sent. When this attempt was signed, in seconds since the Unix epoch.',
        schema: { type: 'integer', format: 'int64', example: 1674087231 },
      },
      {
        name: 'webhook-signature',
        in: 'header',
        description:
          'Always sent. Space-separated `v1,<base64 HMAC-SHA256>` signatures, one per secret while a secret ' +
          'rotates; one matching signature is enough.',
        schema: {
          type: 'string',
          example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
        },
      },
    ],
    requestBody: {
      description: 'Plant added to the store',
      content: {
        'application/json': { schema: { $ref: '#/components/schemas/NewPlant' } },
      },
    },
    responses: {
      '200': {
        description:
          'Return a 200 status to indicate that the data was received successfully (any 2xx ' +
          'counts as received)',
      },
      '410': { description: 'The receiver is gone: no more notices are sent to it' },
    },
  },
};
