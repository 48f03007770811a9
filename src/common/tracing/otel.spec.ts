import { diag } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { logDiagnostics } from './otel.js';

describe('logDiagnostics', () => {
  afterEach(() => {
    diag.disable();
    vi.unstubAllEnvs();
  });

  it("logs the SDK's warnings and errors as warnings, without endpoints or headers", () => {
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', 'http://user:s3cret@collector:4318');
    vi.stubEnv('OTEL_EXPORTER_OTLP_HEADERS', 'authorization=Bearer t0ken');
    const warn = vi.fn();
    logDiagnostics({ warn } as unknown as Logger);
    diag.error('OTEL_TRACES_SAMPLER value "bogus" invalid');
    diag.warn(`Could not parse 'http://user:s3cret@collector:4318/v1/traces'`);
    diag.info('not a warning');
    expect(warn.mock.calls).toEqual([
      [{}, 'opentelemetry: OTEL_TRACES_SAMPLER value "bogus" invalid'],
      [{}, "opentelemetry: Could not parse '[redacted]/v1/traces'"],
    ]);
  });
});
