import { createHmac, type KeyObject } from 'node:crypto';

/**
 * Standard Webhooks 1.0 signing: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one
 * per key, space-separated, so a receiver holding either the old or the new secret verifies
 * while a secret rotates. The sending thread passes KeyObjects made once (a Buffer key costs a
 * KeyObject per call, 13 us on Node 24).
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
