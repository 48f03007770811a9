import type { INestApplication } from '@nestjs/common';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { type NextFunction, type Request, type Response, Router } from 'express';

/** What SwaggerModule.setup uses of the app it is given (and `app.config` only with `useGlobalPrefix`). */
interface RoutesTarget {
  getHttpAdapter(): ExpressAdapter;
  useStaticAssets(path: string, options: { prefix: string }): RoutesTarget;
}

/**
 * Routes that only a few paths reach (the documentation: Swagger UI's ~9 routes and its
 * static assets, the documents, the index), kept on an Express Router of their own and
 * entered through ONE layer of the app's router that tests the path first.
 *
 * Mounted on the app directly, they are layers in front of Nest's routes, and every API
 * request walks them all (each a path-to-regexp match) before reaching its route. They cannot
 * go after Nest's routes instead: `app.init()` ends the stack with Nest's not-found handler,
 * so routes added later are never reached. The layer stays where the old routes were (after
 * the port scope, before Nest's middleware), so what answers a docs request is unchanged.
 *
 * `paths` must match every path the registered routes can answer (Express matches case
 * insensitively, with an optional trailing slash); a path it lets through that no route
 * answers continues to Nest, as before. Only GET and HEAD enter: that is all `get()` routes
 * and static assets answer, and a Router of its own would answer OPTIONS on its paths itself
 * (200 with `Allow`) where the app's router never got to (Nest's 404 came first).
 */
export function mountBehindOneLayer(
  app: NestExpressApplication,
  paths: RegExp,
  register: (target: INestApplication) => void,
): void {
  const router = Router();
  // The same adapter class the app uses, so SwaggerModule's calls (get, useStaticAssets,
  // getRequestUrl, getType) behave as on the app itself.
  const adapter = new ExpressAdapter(router);
  const target: RoutesTarget = {
    getHttpAdapter: () => adapter,
    useStaticAssets(path, options) {
      adapter.useStaticAssets(path, options);
      return target;
    },
  };
  // SwaggerModule.setup is typed for a whole application; it calls only RoutesTarget's methods.
  register(target as unknown as INestApplication);
  app.use(function openApiRoutes(request: Request, response: Response, next: NextFunction) {
    if ((request.method === 'GET' || request.method === 'HEAD') && paths.test(request.path)) {
      router(request, response, next);
    } else {
      next();
    }
  });
}
