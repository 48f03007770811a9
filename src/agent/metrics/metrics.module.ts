import { Global, Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { HttpMetricsMiddleware } from './http-metrics.middleware.js';
import { MetricsController } from './metrics.controller.js';
import { metricProviders } from './metric-providers.js';

/** Prometheus metrics: prom-client's default process metrics plus the application's own. */
@Global()
@Module({
  imports: [
    PrometheusModule.register({
      path: '/metrics',
      controller: MetricsController,
      defaultMetrics: { enabled: true },
    }),
  ],
  providers: [...metricProviders, HttpMetricsMiddleware],
  exports: [...metricProviders, HttpMetricsMiddleware],
})
export class MetricsModule {}
