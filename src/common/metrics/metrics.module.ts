import { Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { HttpRequestMetrics } from './http-request-metrics.js';
import { httpMetricProviders } from './http-metrics.js';
import { MetricsController } from './metrics.controller.js';

/**
 * GET /metrics with prom-client's default process metrics and the HTTP request metrics. The
 * features register their own metrics (plants.metrics.ts, auth.metrics.ts, agent-metrics.ts)
 * in prom-client's default registry, which this endpoint serves.
 */
@Module({
  imports: [
    PrometheusModule.register({
      path: '/metrics',
      controller: MetricsController,
      defaultMetrics: { enabled: true },
    }),
  ],
  providers: [...httpMetricProviders, HttpRequestMetrics],
  exports: [...httpMetricProviders, HttpRequestMetrics],
})
export class MetricsModule {}
