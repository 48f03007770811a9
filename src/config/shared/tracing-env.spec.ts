import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tracingConfigOf, tracingEnvShape } from './tracing-env.js';

const schema = z.object(tracingEnvShape);
const configOf = (env: Record<string, string>) => tracingConfigOf(schema.parse(env), 'svc');
const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('tracing from the OTEL_* variables', () => {
  it.each([
    ['no endpoint', {}],
    ['an empty endpoint', { OTEL_EXPORTER_OTLP_ENDPOINT: '' }],
    ['OTEL_SDK_DISABLED=true', { ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }],
    ['OTEL_TRACES_EXPORTER=none', { ...endpoint, OTEL_TRACES_EXPORTER: 'none' }],
  ])('is off with %s', (_case, env) => {
    expect(configOf(env)).toBeUndefined();
  });

  it('is on with an endpoint, with the standard defaults', () => {
    expect(configOf(endpoint)).toEqual({
      serviceName: 'svc',
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      exportDelayMs: 5000,
      maxQueueSize: 2048,
      shutdownTimeoutMs: 2000,
    });
  });

  it('is on with the traces endpoint alone, and honours the other variables', () => {
    const config = configOf({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector/v1/traces',
      OTEL_SDK_DISABLED: 'false',
      OTEL_SERVICE_NAME: 'shop',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_BSP_MAX_QUEUE_SIZE: '64',
      TRACING_SHUTDOWN_TIMEOUT_SECONDS: '5',
    });
    expect(config).toEqual({
      serviceName: 'shop',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      exportDelayMs: 100,
      maxQueueSize: 64,
      shutdownTimeoutMs: 5000,
    });
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_TRACES_SAMPLER', 'sometimes'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
    ['OTEL_BSP_MAX_QUEUE_SIZE', '0'],
    ['OTEL_SDK_DISABLED', 'yes'],
    ['TRACING_SHUTDOWN_TIMEOUT_SECONDS', '61'],
  ])('refuses %s=%s, naming it', (name, value) => {
    const result = schema.safeParse({ ...endpoint, [name]: value });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toContain(name);
  });
});
