export const ACCEPTED_TOKEN_DIGESTS = Symbol('ACCEPTED_TOKEN_DIGESTS');

/** Injection token of the development token made when API_TOKENS is empty (else undefined). */
export const DEV_TOKEN = Symbol('DEV_TOKEN');

export interface DevToken {
  token: string | undefined;
  file: string | undefined;
}
