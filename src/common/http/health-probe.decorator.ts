import { HealthCheck } from '@nestjs/terminus';

/**
 * Terminus's @HealthCheck for a probe endpoint: never cached, and not described for OpenAPI. The
 * probes are on ports of their own and left out of the document (@ApiExcludeController); with
 * that description on, Terminus also loads @nestjs/swagger through a `createRequire` of its own,
 * which the bundle (scripts/bundle.mjs) cannot see into: a second copy of @nestjs/swagger, Nest
 * and rxjs read from node_modules at every start.
 */
export const HealthProbe = (): MethodDecorator =>
  HealthCheck({ noCache: true, swaggerDocumentation: false });
