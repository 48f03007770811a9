import { Module } from '@nestjs/common';
import {
  makeCounterProvider,
  makeHistogramProvider,
  PrometheusModule,
} from '@willsoto/nestjs-prometheus';
import { HttpRequestMetrics } from './http-request-metrics.js';
import { MetricsController } from './metrics.controller.js';

/** The HTTP metrics of API requests; labels are route templates, never ids. */
const httpMetricProviders = [
  makeCounterProvider({
    name: 'http_requests_total',
    help: 'API requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'],
  }),
  makeCounterProvider({
    name: 'http_connections_refused_total',
    help: 'Connections closed before any request: over a connection cap, request headers late on the health and metrics ports, or a TLS handshake that failed or timed out, by reason.',
    labelNames: ['reason'],
  }),
  makeHistogramProvider({
    name: 'http_request_duration_seconds',
    help: 'API request duration, by method, route template and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
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
