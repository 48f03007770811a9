/** The upstream document's scheme name: generated clients look their credentials up by it. */
export const BEARER_SCHEME = 'bearerAuth';
