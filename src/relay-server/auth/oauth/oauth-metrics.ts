import { makeCounterProvider } from '@willsoto/nestjs-prometheus';

/** The OAuth resource server's metrics; `reason` is one of RefusalReason's fixed values. */
export const oauthMetricProviders = [
  makeCounterProvider({
    name: 'relay_oauth_refusals_total',
    help: 'MCP client requests refused by the OAuth checks (401, 403, 503), by reason.',
    labelNames: ['reason'],
  }),
  makeCounterProvider({
    name: 'relay_oauth_jwks_fetch_failures_total',
    help: 'Failed fetches of the identity provider metadata or signing keys.',
  }),
  makeCounterProvider({
    name: 'relay_oauth_documents_too_large_total',
    help: 'IdP metadata documents or key sets refused for passing RELAY_OAUTH_MAX_DOCUMENT_BYTES.',
  }),
];
