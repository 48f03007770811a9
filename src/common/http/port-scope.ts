import { NotFoundException } from '@nestjs/common';

export type Listener = 'api' | 'health' | 'metrics';

/** Each port serves only its own paths, so a NetworkPolicy per port means what it says. */
export type PortScope = Record<Listener, number>;

export const HEALTH_PATHS = new Set(['/health', '/health/live', '/health/ready']);
export const METRICS_PATHS = new Set(['/metrics']);

/** A process without an API (the webhook worker) has no `api` port. */
export type ProbePorts = Pick<PortScope, 'health' | 'metrics'>;

export function listenerOf(localPort: number | undefined, ports: ProbePorts): Listener {
  if (localPort === ports.health) return 'health';
  if (localPort === ports.metrics) return 'metrics';
  return 'api';
}

/** Express matches routes case-insensitively and with a trailing slash: /METRICS/ is /metrics. */
export function normalPath(path: string): string {
  return (path.length > 1 ? path.replace(/\/+$/, '') : path).toLowerCase();
}

export function pathAllowed(listener: Listener, path: string): boolean {
  const clean = normalPath(path);
  if (listener === 'health') return HEALTH_PATHS.has(clean);
  if (listener === 'metrics') return METRICS_PATHS.has(clean);
  return !HEALTH_PATHS.has(clean) && !METRICS_PATHS.has(clean);
}

// Mounted first (before Swagger UI's routes, which Nest middleware cannot precede): a path the
// port does not serve becomes a 404 for the exception filter. `ports` are the bound ones.
export function portScopeHandler(ports: () => ProbePorts) {
  return (
    request: { socket: { localPort?: number }; path: string; method: string },
    _response: unknown,
    next: (error?: unknown) => void,
  ): void => {
    if (pathAllowed(listenerOf(request.socket.localPort, ports()), request.path)) {
      next();
      return;
    }
    next(new NotFoundException(`Cannot ${request.method} ${request.path}`));
  };
}
