import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks 1.0 signing: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one
 * per key, space-separated, so a receiver holding either the old or the new secret verifies
 * while a secret rotates.
 */
export function signWebhook(
  keys: readonly Buffer[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return keys
    .map((key) => `v1,${createHmac('sha256', key).update(content).digest('base64')}`)
    .join(' ');
}
