import { matchesAnyDigest, sha256 } from '../../config/shared/api-tokens.js';

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
}

/**
 * The agent or client whose accepted digests include `token`. Every owner is checked, each
 * in constant time (api-tokens.ts), so timing tells neither which owner nor which entry
 * matched. The configuration guarantees a token belongs to at most one owner.
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
