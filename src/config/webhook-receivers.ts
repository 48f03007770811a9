import { namesPrivateHost } from './private-addresses.js';
import { Secret } from './secret.js';

export interface WebhookReceiver {
  /**
   * Stable and free of secrets: the outbox's `receiver`, the metrics' label. An HMAC of the
   * URL under the store's key once the store is open (receiver-ids.ts); until then its position.
   */
  id: string;
  /** It may carry credentials or a token: logs, metrics and /health show `host` only. */
  url: Secret<string>;
  host: string;
  /** HMAC keys, decoded from `whsec_` secrets; several while a secret rotates. */
  keys: Secret<Buffer[]>;
}

/** The Standard Webhooks schedule (as Svix): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');

/** SQLite's parameter limit (32,766) holds a group commit of 128 plants for 32 receivers. */
export const MAX_RECEIVERS = 32;

/**
 * WEBHOOK_URLS and WEBHOOK_SECRETS (the same order; each entry one or more `whsec_` secrets):
 * the receivers, or problems naming the variable and entry, never a secret.
 */
export function parseWebhookReceivers(
  urls: string | undefined,
  secrets: string | undefined,
  allowPrivateAddresses = false,
): { receivers: WebhookReceiver[]; problems: string[] } {
  const urlEntries = list(urls);
  const secretEntries = list(secrets);
  const problems: string[] = [];
  if (urlEntries.length !== secretEntries.length) {
    problems.push(
      `WEBHOOK_SECRETS must have one entry per WEBHOOK_URLS entry (${urlEntries.length} URLs, ${secretEntries.length} secrets)`,
    );
  }
  if (urlEntries.length > MAX_RECEIVERS) {
    problems.push(
      `WEBHOOK_URLS holds at most ${MAX_RECEIVERS} receivers (${urlEntries.length} given)`,
    );
  }
  const receivers: WebhookReceiver[] = [];
  urlEntries.forEach((entry, index) => {
    const url = URL.canParse(entry) ? new URL(entry) : undefined;
    const problem = urlProblem(url, index, allowPrivateAddresses);
    if (problem || !url) {
      problems.push(problem ?? '');
      return;
    }
    const keys: Buffer[] = [];
    for (const secret of (secretEntries[index] ?? '').split(/\s+/).filter(Boolean)) {
      const key = decodeSecret(secret);
      if (!key) {
        problems.push(
          `WEBHOOK_SECRETS entry ${index + 1} must be whsec_ followed by base64 of 24 to 64 bytes`,
        );
        return;
      }
      keys.push(key);
    }
    if (keys.length === 0) return;
    receivers.push({
      id: `receiver-${index + 1}`,
      url: new Secret(url.href),
      host: url.host,
      keys: new Secret(keys),
    });
  });
  const distinct = new Set(receivers.map((r) => r.url.reveal()));
  if (distinct.size !== receivers.length) problems.push('WEBHOOK_URLS must not repeat a URL');
  return { receivers, problems };
}

function urlProblem(url: URL | undefined, index: number, allowPrivate: boolean) {
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash !== '') {
    return `WEBHOOK_URLS entry ${index + 1} must be an absolute http(s) URL`;
  }
  if (!allowPrivate && namesPrivateHost(url)) {
    return `WEBHOOK_URLS entry ${index + 1} is a loopback, private or link-local address: set WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true to allow it`;
  }
  return undefined;
}

function decodeSecret(secret: string): Buffer | undefined {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  if (!match) return undefined;
  const key = Buffer.from(match[1]!, 'base64');
  return key.length >= 24 && key.length <= 64 ? key : undefined;
}

export function parseRetrySchedule(value: string | undefined): number[] | undefined {
  const entries = list(value);
  if (entries.length === 0) return DEFAULT_RETRY_SCHEDULE;
  if (!entries.every((e) => /^\d{1,6}$/.test(e))) return undefined;
  return entries.map(Number);
}
