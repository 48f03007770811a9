import type { Request } from 'express';

/** The matched route's template (`/plants/:id`), never the raw path: labels carry no ids. */
export function routeTemplate(request: Request): string {
  const route = (request as { route?: { path?: unknown } }).route;
  return typeof route?.path === 'string' ? `${request.baseUrl}${route.path}` : 'unmatched';
}
