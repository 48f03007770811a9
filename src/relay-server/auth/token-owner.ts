import { sha256 } from '../../config/shared/api-tokens.js';

export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
}

/** Each list of owners by the base64 of its digests, made on first use (the config is fixed). */
const indexes = new WeakMap<readonly object[], Map<string, object>>();

// Looked up by the token's SHA-256: the time taken says nothing about any token, and a relay
// with thousands of tokens checks one.
export function ownerOf<T extends { tokenDigests: Buffer[] }>(
  token: string | undefined,
  owners: readonly T[],
): T | undefined {
  if (token === undefined) return undefined;
  let index = indexes.get(owners);
  if (!index) {
    index = new Map();
    for (const owner of owners) {
      for (const digest of owner.tokenDigests) {
        const key = digest.toString('base64');
        if (!index.has(key)) index.set(key, owner);
      }
    }
    indexes.set(owners, index);
  }
  return index.get(sha256(token).toString('base64')) as T | undefined;
}
