import { matchesAnyToken } from '../../config/shared/api-tokens.js';

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
  let found: T | undefined;
  for (const owner of owners) {
    if (matchesAnyToken(token, owner.tokenDigests)) found ??= owner;
  }
  return found;
}
