import { register } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpRequestMetrics } from './http-request-metrics.js';

describe('HttpRequestMetrics', () => {
  afterEach(() => register.clear());

  it('writes the counter and the histogram as prom-client would', async () => {
    const metrics = new HttpRequestMetrics();
    metrics.record('POST', '/plants', 200, 0.0005); // on a bound: that bucket (le is inclusive)
    metrics.record('POST', '/plants', 200, 0.003);
    metrics.record('POST', '/plants', 400, 7);
    const text = await register.metrics();
    const ok = 'method="POST",route="/plants",status="200"';
    expect(text).toContain(`http_requests_total{${ok}} 2\n`);
    expect(text).toContain('http_requests_total{method="POST",route="/plants",status="400"} 1\n');
    expect(text).toContain(`http_request_duration_seconds_bucket{${ok},le="0.0005"} 1\n`);
    expect(text).toContain(`http_request_duration_seconds_bucket{${ok},le="0.0025"} 1\n`);
    expect(text).toContain(`http_request_duration_seconds_bucket{${ok},le="0.005"} 2\n`);
    expect(text).toContain(`http_request_duration_seconds_bucket{${ok},le="+Inf"} 2\n`);
    expect(text).toContain(`http_request_duration_seconds_sum{${ok}} 0.0035\n`);
    expect(text).toContain(`http_request_duration_seconds_count{${ok}} 2\n`);
    const slow = 'method="POST",route="/plants",status="400"';
    expect(text).toContain(`http_request_duration_seconds_bucket{${slow},le="2.5"} 0\n`);
    expect(text).toContain(`http_request_duration_seconds_bucket{${slow},le="+Inf"} 1\n`);
    expect(text).toMatch(/# TYPE http_request_duration_seconds histogram\n/);
    expect(text).toMatch(/# TYPE http_requests_total counter\n/);
  });

  it('shares one set of series between the apps of a process', async () => {
    new HttpRequestMetrics().record('GET', '/plants/:id', 200, 0.001);
    new HttpRequestMetrics().record('GET', '/plants/:id', 200, 0.001);
    expect(await register.metrics()).toContain(
      'http_requests_total{method="GET",route="/plants/:id",status="200"} 2\n',
    );
  });
});
