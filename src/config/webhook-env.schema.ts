import { z } from 'zod';
import { setting, trueOrFalse, unsetIfEmpty, wholeNumberSettings } from './shared/env-fields.js';
import { parseRetrySchedule } from './webhook-receivers.js';

/** The plant webhook's settings, read by the service and the webhook worker. */
const BYTES = 'must be a whole number of bytes';

export const webhookEnvFields = {
  WEBHOOK_URLS: setting(z.string().optional(), {
    description: 'Receivers, comma-separated http(s) URLs (at most 32)',
    group: 'webhook',
    secret: true,
    unset: 'none',
  }),
  WEBHOOK_SECRETS: setting(z.string().optional(), {
    description: 'One `whsec_` entry per URL (`npm run token -- --webhook`)',
    group: 'webhook',
    secret: true,
  }),
  WEBHOOK_RETRY_SCHEDULE_SECONDS: setting(
    z
      .string()
      .optional()
      .refine(
        (v) => parseRetrySchedule(v) !== undefined,
        'WEBHOOK_RETRY_SCHEDULE_SECONDS must be comma-separated whole numbers of seconds',
      ),
    {
      description: 'Seconds between tries; when they run out the notice is `failed`',
      group: 'webhook',
      unset: '`5,300,1800,7200,18000,36000,36000`',
    },
  ),
  WEBHOOK_DELIVERY: setting(
    unsetIfEmpty(
      z.enum(['in-process', 'external'], {
        error: 'WEBHOOK_DELIVERY must be in-process or external',
      }),
    ).default('in-process'),
    {
      description: 'API only; `external`: `npm run webhook-worker` delivers (PostgreSQL only)',
      group: 'webhook',
    },
  ),
  ...wholeNumberSettings(
    {
      WEBHOOK_MAX_IN_FLIGHT_PER_RECEIVER: [1, 256, 16, 'Attempts in flight to one receiver'],
      WEBHOOK_MAX_ANSWER_BYTES: [0, 9_999_999, 4096, "Bytes of a receiver's answer read", BYTES],
      // Pending notices are counted up to this per receiver every 5 s: a few ms of index reads.
      WEBHOOK_BACKLOG_COUNT_CAP: [1, 1e6, 10_000, 'Pending notices counted per receiver'],
    },
    'webhook',
  ),
  // Off by default: a receiver's DNS owner could otherwise point our POSTs inward.
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: setting(
    unsetIfEmpty(trueOrFalse('WEBHOOK_ALLOW_PRIVATE_ADDRESSES')).default('false'),
    {
      description: 'Allow receivers on loopback, private or link-local addresses',
      group: 'webhook',
    },
  ),
};
