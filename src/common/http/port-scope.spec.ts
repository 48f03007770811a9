import { describe, expect, it } from 'vitest';
import { listenerOf, pathAllowed } from './port-scope.js';

const ports = { api: 3000, health: 8080, metrics: 9090 };

describe('port scope', () => {
  it('knows which listener a request came in on', () => {
    expect(listenerOf(3000, ports)).toBe('api');
    expect(listenerOf(8080, ports)).toBe('health');
    expect(listenerOf(9090, ports)).toBe('metrics');
  });

  it.each([
    ['health', '/health', true],
    ['health', '/health/live', true],
    ['health', '/health/ready/', true],
    ['health', '/plants', false],
    ['health', '/metrics', false],
    ['metrics', '/metrics', true],
    ['metrics', '/health', false],
    ['metrics', '/docs', false],
    ['api', '/plants', true],
    ['api', '/docs', true],
    ['api', '/metrics', false],
    ['api', '/health/live', false],
  ] as const)('%s serves %s: %s', (listener, path, allowed) => {
    expect(pathAllowed(listener, path)).toBe(allowed);
  });
});
