import { Global, Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { relayMetricProviders } from './relay-metrics.js';

/** GET /metrics (served on RELAY_METRICS_PORT only): process metrics plus the relay's own. */
@Global()
@Module({
  imports: [PrometheusModule.register({ path: '/metrics', defaultMetrics: { enabled: true } })],
  providers: relayMetricProviders,
  exports: relayMetricProviders,
})
export class RelayMetricsModule {}
