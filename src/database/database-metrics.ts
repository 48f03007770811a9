import { makeCounterProvider } from '@willsoto/nestjs-prometheus';

/** Requests refused a PostgreSQL connection: the pool full, or the server not answering. */
export const POOL_REFUSALS = 'db_pool_acquire_failures_total';

export const databaseMetricProviders = [
  makeCounterProvider({
    name: POOL_REFUSALS,
    help: 'PostgreSQL connections not obtained within 3 s, by reason (pool_full, connect_failed).',
    labelNames: ['reason'],
  }),
];
