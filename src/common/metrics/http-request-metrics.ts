import { Injectable } from '@nestjs/common';
import { type Metric, register } from 'prom-client';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const COUNT = 'http_requests_total';
const DURATION = 'http_request_duration_seconds';
const HELP = 'by method, route template and status.';

/** One label set: a request adds to numbers only (prom-client's observe allocates and hashes). */
class Series {
  count = 0;
  sum = 0;
  /** Per bucket, not cumulative; the last is +Inf. */
  readonly buckets = new Float64Array(BUCKETS.length + 1);
  readonly labels: { method: string; route: string; status: string };
  constructor(
    method: string,
    route: string,
    readonly status: number,
  ) {
    this.labels = { method, route, status: String(status) };
  }

  /** As prom-client writes a histogram: cumulative buckets, then _sum and _count. */
  histogram() {
    let total = 0;
    const buckets = [...BUCKETS, '+Inf'].map((le, i) => {
      total += this.buckets[i] ?? 0;
      return { metricName: `${DURATION}_bucket`, labels: { ...this.labels, le }, value: total };
    });
    return [
      ...buckets,
      { metricName: `${DURATION}_sum`, labels: this.labels, value: this.sum },
      { metricName: `${DURATION}_count`, labels: this.labels, value: this.count },
    ];
  }
}

/** The series of every app in the process (by route), read by prom-client at each scrape. */
function sharedSeries(): Map<string, Series[]> {
  const known = register.getSingleMetric(COUNT) as { series?: Map<string, Series[]> } | undefined;
  if (known?.series) return known.series;
  const series = new Map<string, Series[]>();
  const all = () => [...series.values()].flat();
  const metric = (name: string, type: string, help: string, values: () => object[]) => {
    const get = () => Promise.resolve({ name, type, help, aggregator: 'sum', values: values() });
    register.registerMetric({
      name,
      series,
      get,
      reset: () => series.clear(),
    } as unknown as Metric);
  };
  metric(COUNT, 'counter', `API requests answered, ${HELP}`, () =>
    all().map(({ labels, count }) => ({ labels, value: count })),
  );
  metric(DURATION, 'histogram', `API request duration, ${HELP}`, () =>
    all().flatMap((s) => s.histogram()),
  );
  return series;
}

/** The API's HTTP metrics, on the path of every request: counted without allocating. */
@Injectable()
export class HttpRequestMetrics {
  private readonly series = sharedSeries();

  record(method: string, route: string, status: number, seconds: number): void {
    const series = this.seriesFor(method, route, status);
    series.count++;
    series.sum += seconds;
    let bucket = 0;
    while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] ?? 0)) bucket++;
    series.buckets[bucket] = (series.buckets[bucket] ?? 0) + 1;
  }

  private seriesFor(method: string, route: string, status: number): Series {
    let list = this.series.get(route);
    if (!list) this.series.set(route, (list = []));
    for (const series of list) {
      if (series.status === status && series.labels.method === method) return series;
    }
    const series = new Series(method, route, status);
    list.push(series);
    return series;
  }
}
