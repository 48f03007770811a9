import { makeCounterProvider } from '@willsoto/nestjs-prometheus';

export const authMetricProviders = [
  makeCounterProvider({
    name: 'auth_failures_total',
    help: 'API requests refused for a missing or invalid bearer token.',
  }),
];
