import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { BEARER_SCHEME } from './bearer-scheme.js';
import { PLANT_WEBHOOK, plantWebhook } from './plant-webhook.openapi.js';
import { swaggerUiOptions } from './swagger-ui-options.js';

/**
 * The API document, generated from the DTOs and decorators and committed as `openapi.json`
 * (a test fails on drift). The upstream Plant Store document must stay a subset of it (CI runs
 * oasdiff), hence `bearerAuth`, `/plant/webhook` and the contract's own version, 1.0.0.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Plant Store')
    .setDescription('A sample plant store: create, read, list and delete plants.')
    .setVersion('1.0.0')
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

/** Bodies' schemas say `additionalProperties: false`, as the pipe refuses unknown properties. */
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

/** The docs, the document and an index at /: public Express routes, kept to the API port. */
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
