import 'reflect-metadata';
import { Controller, Get, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LosslessExpressAdapter } from '../common/http/lossless-express.adapter.js';
import { buildOpenApiDocument, serveOpenApi } from './openapi.js';

@Controller('plants')
class PlantsStandIn {
  @Get(':id')
  get(@Param('id') id: string): { id: string } {
    return { id };
  }
}

@Module({ controllers: [PlantsStandIn] })
class StandInModule {}

describe('serveOpenApi: the documentation routes', () => {
  let app: NestExpressApplication;
  let base: string;

  beforeAll(async () => {
    app = await NestFactory.create<NestExpressApplication>(
      StandInModule,
      new LosslessExpressAdapter(),
      { logger: false, bodyParser: false },
    );
    serveOpenApi(app, buildOpenApiDocument(app));
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app?.close();
  });

  it.each([
    ['GET', '/', 200, 'application/json'],
    ['GET', '/openapi.json', 200, 'application/json'],
    ['GET', '/OpenAPI.json/', 200, 'application/json'],
    ['HEAD', '/openapi.json', 200, 'application/json'],
    ['GET', '/openapi.yaml', 200, 'text/yaml'],
    ['GET', '/docs', 200, 'text/html'],
    ['GET', '/docs/', 200, 'text/html'],
    ['GET', '/docs/index.html', 200, 'text/html'],
    ['GET', '/docs/swagger-ui-init.js', 200, 'application/javascript'],
    ['GET', '/docs/swagger-ui-bundle.js', 200, 'text/javascript'],
    ['GET', '/docs/swagger-ui.css', 200, 'text/css'],
    ['GET', '/docs/LICENSE', 404, 'application/json'],
    ['GET', '/docs/nothing-here', 404, 'application/json'],
    ['GET', '/docsx', 404, 'application/json'],
    // Other methods reach Nest's 404, as when the routes were the app's own.
    ['OPTIONS', '/docs', 404, 'application/json'],
    ['OPTIONS', '/openapi.json', 404, 'application/json'],
    ['POST', '/openapi.json', 404, 'application/json'],
  ])('%s %s answers %i %s as Swagger UI set it up', async (method, path, status, type) => {
    const response = await fetch(`${base}${path}`, { method });
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toMatch(new RegExp(`^${type}`));
  });

  it('serves the document it was given at /openapi.json and links it from /', async () => {
    const document = (await (await fetch(`${base}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(document.paths)).toEqual(['/plants/{id}']);
    const init = await (await fetch(`${base}/docs/swagger-ui-init.js`)).text();
    expect(init).toContain('"/plants/{id}"');
    expect(await (await fetch(base)).json()).toMatchObject({ docs: '/docs' });
  });
});
