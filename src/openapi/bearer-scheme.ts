/**
 * The name of the API's security scheme. It is the upstream Plant Store document's name: clients
 * generated from that document look their credentials up by it.
 */
export const BEARER_SCHEME = 'bearerAuth';
