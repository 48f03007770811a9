import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signWebhook } from './webhook-signature.js';

const secret = () => {
  const key = randomBytes(32);
  return { key, whsec: `whsec_${key.toString('base64')}` };
};

/** Checked with the reference implementation (npm standardwebhooks), not with our own code. */
describe('signWebhook', () => {
  const body = '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}';
  const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const now = Math.floor(Date.now() / 1000);

  it('signs as Standard Webhooks 1.0 verifies', () => {
    const { key, whsec } = secret();
    const signature = signWebhook([key], id, now, body);
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(now),
      'webhook-signature': signature,
    };
    expect(new Webhook(whsec).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('carries one signature per key while a secret rotates; either key verifies', () => {
    const [old, next] = [secret(), secret()];
    const signature = signWebhook([old.key, next.key], id, now, body);
    expect(signature.split(' ')).toHaveLength(2);
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(now),
      'webhook-signature': signature,
    };
    for (const { whsec } of [old, next]) {
      expect(() => new Webhook(whsec).verify(body, headers)).not.toThrow();
    }
    expect(() => new Webhook(secret().whsec).verify(body, headers)).toThrow();
  });

  it('does not verify once the body changes', () => {
    const { key, whsec } = secret();
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(now),
      'webhook-signature': signWebhook([key], id, now, body),
    };
    expect(() => new Webhook(whsec).verify(body.replace('993', '992'), headers)).toThrow();
  });
});
