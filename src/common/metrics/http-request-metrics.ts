import { Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Histogram } from 'prom-client';

interface Series {
  requests: { inc(): void };
  duration: { observe(seconds: number): void };
}

/** The API's HTTP metrics; each label set's series is looked up once (prom-client hashes them). */
@Injectable()
export class HttpRequestMetrics {
  private readonly series = new Map<string, Series>();

  constructor(
    @InjectMetric('http_requests_total') private readonly requests: Counter,
    @InjectMetric('http_request_duration_seconds') private readonly duration: Histogram,
  ) {}

  record(method: string, route: string, status: number, seconds: number): void {
    const series = this.seriesFor(method, route, status);
    series.requests.inc();
    series.duration.observe(seconds);
  }

  private seriesFor(method: string, route: string, status: number): Series {
    const key = `${method} ${route} ${status}`;
    let series = this.series.get(key);
    if (!series) {
      const labels = { method, route, status: String(status) };
      series = { requests: this.requests.labels(labels), duration: this.duration.labels(labels) };
      this.series.set(key, series);
    }
    return series;
  }
}
