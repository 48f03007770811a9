import { hash, timingSafeEqual } from 'node:crypto';

/**
 * Tokens are kept as SHA-256 digests only: an entry is `sha256:<64 hex>` (the token is then
 * never in the environment) or a plain token of at least 32 characters.
 */
export const MIN_PLAIN_TOKEN_LENGTH = 32;
const DIGEST_ENTRY = /^sha256:([0-9a-fA-F]{64})$/;

/** One-shot `crypto.hash` per API request; its hex decoded costs half its 'buffer' output. */
export function sha256(token: string): Buffer {
  return Buffer.from(hash('sha256', token), 'hex');
}

export type ParsedApiTokens = ReturnType<typeof parseApiTokens>;

/** `label` names the setting in problems; the relay server passes its own. */
export function parseApiTokens(value: string | undefined, label = 'API_TOKENS') {
  const result = { digests: [] as Buffer[], problems: [] as string[] };
  if (value === undefined || value.trim() === '') return result;
  value.split(',').forEach((raw, index) => {
    const entry = raw.trim();
    const digest = DIGEST_ENTRY.exec(entry);
    if (digest?.[1]) {
      result.digests.push(Buffer.from(digest[1], 'hex'));
    } else if (entry.startsWith('sha256:')) {
      result.problems.push(`${label} entry ${index + 1} must be sha256: followed by 64 hex digits`);
    } else if (entry.length < MIN_PLAIN_TOKEN_LENGTH || /\s/.test(entry)) {
      // Never echo the entry: it is a secret even when it is a bad one.
      result.problems.push(
        `${label} entry ${index + 1} must be sha256:<64 hex> or a plain token of at least ${MIN_PLAIN_TOKEN_LENGTH} characters without whitespace`,
      );
    } else {
      result.digests.push(sha256(entry));
    }
  });
  return result;
}

/** Compares fixed-size digests with timingSafeEqual, all of them: no length or entry leaks. */
export function matchesAnyToken(token: string, digests: readonly Buffer[]): boolean {
  const presented = sha256(token);
  let matched = false;
  for (const digest of digests) {
    matched = timingSafeEqual(presented, digest) || matched;
  }
  return matched;
}
