import { matchesAnyDigest, sha256 } from '../../config/shared/api-tokens.js';

export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
}

/**
 * The agent or client whose digests include `token`. Every owner is checked in constant time,
 * so timing tells neither which owner nor which entry matched.
 */
export function ownerOf<T extends { tokenDigests: Buffer[] }>(
  token: string | undefined,
  owners: readonly T[],
): T | undefined {
  if (token === undefined) return undefined;
  // Hashed once, not once per owner: a relay may have hundreds of clients.
  const presented = sha256(token);
  let found: T | undefined;
  for (const owner of owners) {
    if (matchesAnyDigest(presented, owner.tokenDigests)) found ??= owner;
  }
  return found;
}
