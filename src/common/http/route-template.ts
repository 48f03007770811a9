import type { Request } from 'express';

/**
 * The matched route's template (`/plants/:id`), never the raw path: logs and metric labels
 * stay low-cardinality and carry no ids. Requests no route matched are grouped as "unmatched".
 */
export function routeTemplate(request: Request): string {
  const route = (request as { route?: { path?: unknown } }).route;
  return typeof route?.path === 'string' ? `${request.baseUrl}${route.path}` : 'unmatched';
}
