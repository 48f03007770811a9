import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { signWebhook } from './webhook-signature.js';

type Verify = (secret: string, headers: Record<string, string>, body: string) => boolean;

/** The README's verification snippet, run as written against what the service signs. */
describe("the README's webhook verification snippet", () => {
  it('accepts our signatures, rotated ones too, and refuses a wrong secret, body or stale time', async () => {
    const readme = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');
    const snippet = /Verify a notice in a receiver[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(snippet).toBeDefined();
    const file = join(mkdtempSync(join(tmpdir(), 'readme-verify-')), 'verify.mjs');
    writeFileSync(file, `${snippet}\nexport { verify };\n`);
    const { verify } = (await import(pathToFileURL(file).href)) as { verify: Verify };

    const [key, other] = [randomBytes(32), randomBytes(32)];
    const whsec = (k: Buffer) => `whsec_${k.toString('base64')}`;
    const body = '{"id":9007199254740993,"name":"Monstera"}';
    const id = 'msg_abc';
    const now = Math.floor(Date.now() / 1000);
    const headers = (keys: Buffer[], ts = now) => ({
      'webhook-id': id,
      'webhook-timestamp': String(ts),
      'webhook-signature': signWebhook(keys, id, ts, body),
    });
    expect(verify(whsec(key), headers([key]), body)).toBe(true);
    expect(verify(whsec(key), headers([other, key]), body)).toBe(true);
    expect(verify(whsec(other), headers([key]), body)).toBe(false);
    expect(verify(whsec(key), headers([key]), body.replace('993', '992'))).toBe(false);
    expect(verify(whsec(key), headers([key], now - 3600), body)).toBe(false);
  });
});
