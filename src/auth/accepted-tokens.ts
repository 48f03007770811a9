/** Injection token of the SHA-256 digests of every accepted API token. */
export const ACCEPTED_TOKEN_DIGESTS = Symbol('ACCEPTED_TOKEN_DIGESTS');

/** Injection token of the development token made when API_TOKENS is empty (else undefined). */
export const DEV_TOKEN = Symbol('DEV_TOKEN');

export interface DevToken {
  token: string | undefined;
  file: string | undefined;
}
