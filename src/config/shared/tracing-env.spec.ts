import { formatIssues } from './issue-path.js';
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

  it("is on with an endpoint, with OpenTelemetry's default protocol", () => {
    expect(configOf(endpoint)).toEqual({
      defaultServiceName: 'svc',
      protocol: 'http/protobuf',
      endpoint: 'http://collector:4318/v1/traces',
      shutdownTimeoutMs: 2000,
    });
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, 'http/json', 'http://collector:4318/v1/traces'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'grpc', 'http://collector:4318/'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }, 'http/protobuf', 'http://collector:4318/v1/traces'],
    [
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' },
      'http/json',
      'http://collector:4318/v1/traces',
    ],
  ])('exports with %o over %s to %s', (env, protocol, url) => {
    expect(configOf({ ...endpoint, ...env })).toMatchObject({ protocol, endpoint: url });
  });

  it('keeps user, password and query of the endpoint out of what it logs', () => {
    const config = configOf({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://user:s3cret@collector/otlp/traces?token=t0k',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
      OTEL_SDK_DISABLED: 'false',
      TRACING_SHUTDOWN_TIMEOUT_SECONDS: '5',
    });
    expect(config).toMatchObject({
      endpoint: 'https://collector/otlp/traces',
      shutdownTimeoutMs: 5000,
    });
  });

  it('says "not a URL" for an endpoint it cannot parse, without echoing it', () => {
    expect(configOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector token' })?.endpoint).toBe(
      'not a URL',
    );
  });

  it('refuses TRACING_SHUTDOWN_TIMEOUT_SECONDS=61, naming it', () => {
    const result = schema.safeParse({ ...endpoint, TRACING_SHUTDOWN_TIMEOUT_SECONDS: '61' });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toContain('TRACING_SHUTDOWN_TIMEOUT_SECONDS');
  });

  it('refuses an exporter this build does not carry, naming the variable', () => {
    const result = schema.safeParse({ ...endpoint, OTEL_TRACES_EXPORTER: 'otlp,console' });
    expect(formatIssues(result.error!.issues)).toEqual([
      'OTEL_TRACES_EXPORTER must be otlp or none (spans go over OTLP)',
    ]);
    for (const exporters of ['otlp', ' otlp ', 'otlp,null', 'otlp, none']) {
      expect(configOf({ ...endpoint, OTEL_TRACES_EXPORTER: exporters }), exporters).toBeDefined();
    }
    for (const exporters of ['none', 'none ', 'none,otlp']) {
      expect(configOf({ ...endpoint, OTEL_TRACES_EXPORTER: exporters }), exporters).toBeUndefined();
    }
  });
});
