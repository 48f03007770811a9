import { Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { HttpRequestMetrics } from './http-request-metrics.js';
import { httpMetricProviders } from './http-metrics.js';
import { MetricsController } from './metrics.controller.js';

/** GET /metrics: prom-client's default registry, where every feature registers its metrics. */
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
