import {
  makeCounterProvider,
  makeGaugeProvider,
  makeHistogramProvider,
} from '@willsoto/nestjs-prometheus';

/** Labelled by the receiver's id (listed with its host in /health): few, no secrets. */
const by = (name: string, help: string, ...labels: string[]) => ({
  name,
  help: `Plant webhook: ${help}`,
  labelNames: ['receiver', ...labels],
});

export const webhookMetricProviders = [
  makeCounterProvider(
    by('webhook_deliveries_total', 'notices finished (delivered, failed, stopped).', 'outcome'),
  ),
  makeCounterProvider(
    by(
      'webhook_delivery_attempts_total',
      'delivery attempts (2xx, 410, retry, private_address: refused, retried).',
      'result',
    ),
  ),
  makeCounterProvider(
    by('webhook_answers_cut_total', 'answers over WEBHOOK_MAX_ANSWER_BYTES, the rest unread.'),
  ),
  makeHistogramProvider({
    ...by('webhook_delivery_duration_seconds', 'duration of one attempt.'),
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
  }),
  makeGaugeProvider(
    by(
      'webhook_pending_notices',
      'notices waiting (all processes), up to WEBHOOK_BACKLOG_COUNT_CAP.',
    ),
  ),
  makeGaugeProvider(
    by(
      'webhook_pending_notices_capped',
      '1 when the notices waiting reached WEBHOOK_BACKLOG_COUNT_CAP.',
    ),
  ),
  makeGaugeProvider(
    by('webhook_oldest_pending_age_seconds', 'age of the oldest notice waiting; 0 when none.'),
  ),
];
