import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { BEARER_SCHEME } from './bearer-scheme.js';
import { PLANT_WEBHOOK, plantWebhook } from './plant-webhook.openapi.js';
import { swaggerUiOptions } from './swagger-ui-options.js';

/**
 * The API document, generated from the DTOs and decorators: OpenAPI 3.1.0, version 1.0.0, MIT,
 * one http/bearer scheme on every plant operation, and the plant webhook. It is committed as
 * `openapi.json`, and a test fails when the served document drifts from it.
 *
 * The upstream "OpenAPI Plant Store" document (clients generated from it exist) must stay a
 * subset of this one: CI runs `oasdiff breaking <upstream> openapi.json`. Hence the scheme name
 * `bearerAuth` and the webhook `/plant/webhook`.
 */
/**
 * The version of the API contract, not of the package: the operations are those of the upstream
 * document's 1.0.0, so releases of the service (1.1.0, ...) leave it alone.
 */
export const API_DOCUMENT_VERSION = '1.0.0';

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Plant Store')
    .setDescription('A sample plant store: create, read, list and delete plants.')
    .setVersion(API_DOCUMENT_VERSION)
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    // addSecurity, not addBearerAuth: that one adds `bearerFormat: JWT`, and ours are not JWTs.
    .addSecurity(BEARER_SCHEME, {
      type: 'http',
      scheme: 'bearer',
      // Shown in Swagger UI's Authorize dialog: a newcomer's token is the development one.
      description:
        'An API token from API_TOKENS. In development (no API_TOKENS, NODE_ENV not production) the service makes one: printed at start and kept in the file the start-up banner names, dev-token in DATA_DIR (./data/dev-token by default).',
    })
    .build();
  const withWebhooks = { ...config, webhooks: { [PLANT_WEBHOOK]: plantWebhook } };
  const document = SwaggerModule.createDocument(app, withWebhooks, {
    operationIdFactory: (_controller, method) => method,
  });
  closeRequestBodies(document);
  return document;
}

/**
 * The validation pipe refuses unknown properties in request bodies, so their schemas say
 * `additionalProperties: false` (@nestjs/swagger has no class-level option for it).
 */
function closeRequestBodies(document: OpenAPIObject): void {
  const schemas = document.components?.schemas ?? {};
  for (const item of Object.values(document.paths)) {
    for (const operation of [item.get, item.post, item.put, item.patch, item.delete]) {
      const body = operation?.requestBody;
      const ref = body && 'content' in body ? body.content['application/json']?.schema : undefined;
      const name = ref && '$ref' in ref ? ref.$ref.split('/').at(-1) : undefined;
      const schema = name ? schemas[name] : undefined;
      if (schema && !('$ref' in schema)) schema.additionalProperties = false;
    }
  }
}

/** The API port's `GET /`: where the documentation is, instead of a bare 404. */
export const API_INDEX = {
  name: 'Plant Store',
  docs: '/docs',
  openapi: '/openapi.json',
  openapiYaml: '/openapi.yaml',
};

/**
 * /openapi.json, /openapi.yaml, Swagger UI at /docs and an index at /, all public. Plain Express
 * routes, like Swagger UI's: no guard, and not operations of the document. The port scope
 * (mounted before) keeps them to the API port.
 */
export function serveOpenApi(app: INestApplication, document: OpenAPIObject): void {
  app
    .getHttpAdapter()
    .get('/', (_request: unknown, response: { json(body: unknown): void }) =>
      response.json(API_INDEX),
    );
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Plant Store API',
    swaggerOptions: swaggerUiOptions,
  });
}
