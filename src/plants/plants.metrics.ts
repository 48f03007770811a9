import { makeCounterProvider, makeHistogramProvider } from '@willsoto/nestjs-prometheus';

/** The plants feature's own metrics, served on /metrics by common/metrics. */
export const plantsMetricProviders = [
  makeCounterProvider({ name: 'plants_created_total', help: 'Plants created.' }),
  // Sub-millisecond buckets: on a fast disk a group commit (one transaction, one fsync) takes
  // well under 1 ms; the upper ones show a slow or overloaded volume.
  makeHistogramProvider({
    name: 'store_commit_duration_seconds',
    help: 'Plant store group commits that committed: time of the one INSERT transaction.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  }),
  makeHistogramProvider({
    name: 'store_commit_batch_size',
    help: 'Plant store group commits that committed: plants written in one transaction.',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
  }),
];
