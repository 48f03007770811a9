import { Module } from '@nestjs/common';
import { makeCounterProvider, PrometheusModule } from '@willsoto/nestjs-prometheus';
import { HttpRequestMetrics } from './http-request-metrics.js';
import { MetricsController } from './metrics.controller.js';

/** As prom-client counters; the API's request metrics are HttpRequestMetrics' own. */
const httpMetricProviders = [
  makeCounterProvider({
    name: 'http_connections_refused_total',
    help: 'Connections closed before any request: over a connection cap, request headers late on the health and metrics ports, or a TLS handshake that failed or timed out, by reason.',
    labelNames: ['reason'],
  }),
];

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
