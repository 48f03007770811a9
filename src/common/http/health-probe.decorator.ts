import { HealthCheck } from '@nestjs/terminus';

// Terminus's @HealthCheck, never cached and without its OpenAPI description: with it,
// Terminus loads a second copy of @nestjs/swagger that the bundle cannot see into.
export const HealthProbe = (): MethodDecorator =>
  HealthCheck({ noCache: true, swaggerDocumentation: false });
