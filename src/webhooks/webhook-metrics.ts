import {
  makeCounterProvider,
  makeGaugeProvider,
  makeHistogramProvider,
} from '@willsoto/nestjs-prometheus';

/** The plant webhook's metrics; labelled by receiver host (operator-chosen, few), never URL. */
export const webhookMetricProviders = [
  makeCounterProvider({
    name: 'webhook_deliveries_total',
    help: 'Plant webhook notices finished, by receiver host and outcome (delivered, failed, stopped).',
    labelNames: ['receiver', 'outcome'],
  }),
  makeCounterProvider({
    name: 'webhook_delivery_attempts_total',
    help: 'Plant webhook delivery attempts, by receiver host and result (2xx, 410, retry).',
    labelNames: ['receiver', 'result'],
  }),
  makeHistogramProvider({
    name: 'webhook_delivery_duration_seconds',
    help: 'Duration of one plant webhook attempt, by receiver host.',
    labelNames: ['receiver'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
  }),
  makeGaugeProvider({
    name: 'webhook_pending_notices',
    help: 'Plant webhook notices waiting to be delivered (all replicas), refreshed every 5 s.',
  }),
  makeGaugeProvider({
    name: 'webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest plant webhook notice waiting to be delivered; 0 when none.',
  }),
];
