import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseApiTokens } from './shared/api-tokens.js';
import { parseWebhookReceivers } from './webhook-receivers.js';

/** `npm run token` prints what an operator pastes into the environment: check it is accepted. */
const SCRIPT = resolve(import.meta.dirname, '../../scripts/token.mjs');
const run = (...args: string[]) =>
  execFileSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
const valueOf = (output: string, label: string) =>
  new RegExp(`^${label}:\\s+(\\S+)$`, 'm').exec(output)?.[1] ?? '';

describe('npm run token', () => {
  it('prints a token whose sha256 entry API_TOKENS accepts', () => {
    const entry = valueOf(run(), 'API_TOKENS entry');
    expect(entry).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(parseApiTokens(entry).problems).toEqual([]);
  });

  it('-- --webhook prints a whsec_ secret WEBHOOK_SECRETS accepts', () => {
    const secret = valueOf(run('--webhook'), 'WEBHOOK_SECRETS entry');
    expect(secret).toMatch(/^whsec_/);
    const parsed = parseWebhookReceivers('https://hooks.example.com/plants', secret);
    expect(parsed.problems).toEqual([]);
    expect(parsed.receivers).toHaveLength(1);
  });
});
