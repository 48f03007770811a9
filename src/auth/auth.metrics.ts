import { makeCounterProvider } from '@willsoto/nestjs-prometheus';

/** The auth feature's own metrics, served on /metrics by common/metrics. */
export const authMetricProviders = [
  makeCounterProvider({
    name: 'auth_failures_total',
    help: 'API requests refused for a missing or invalid bearer token.',
  }),
];
