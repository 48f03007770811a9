import { makeCounterProvider } from '@willsoto/nestjs-prometheus';

/** The plants feature's own metrics, served on /metrics by common/metrics. */
export const plantsMetricProviders = [
  makeCounterProvider({ name: 'plants_created_total', help: 'Plants created.' }),
];
