import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';

interface Schema {
  $ref?: string;
  type?: string;
  items?: Schema;
}
interface Operation {
  operationId: string;
  security?: Record<string, unknown>[];
  parameters?: { name: string; in: string; required?: boolean; schema: Record<string, unknown> }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<
    string,
    {
      description: string;
      content?: Record<string, { schema: Schema }>;
      headers?: Record<string, { description: string; schema: { type: string } }>;
    }
  >;
}
type Document = {
  openapi: string;
  info: { version: string; license: { name: string } };
  paths: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<
      string,
      { properties: Record<string, Record<string, unknown>>; required?: string[] }
    >;
    securitySchemes: Record<string, unknown>;
  };
};

describe('OpenAPI document', () => {
  let app: RunningApp;
  let served: Document;
  beforeAll(async () => {
    app = await startApp();
    served = (await call(`${app.apiUrl}/openapi.json`)).json as Document;
  });
  afterAll(async () => {
    await app.stop();
  });

  it('is the committed openapi.json (run `npm run openapi` after changing the API)', () => {
    const committed = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8')) as unknown;
    expect(served).toEqual(committed);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(
      JSON.parse(JSON.stringify(served)) as Record<string, unknown>,
    );
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('says 3.1.0, version 1.0.0, MIT, and the upstream bearerAuth scheme on every plant operation', () => {
    expect(served.openapi).toBe('3.1.0');
    expect(served.info.version).toBe('1.0.0');
    expect(served.info.license.name).toBe('MIT');
    // The upstream document's name and shape: our tokens are not JWTs, so no bearerFormat.
    expect(Object.keys(served.components.securitySchemes)).toEqual(['bearerAuth']);
    const scheme = served.components.securitySchemes.bearerAuth as Record<string, string>;
    expect(Object.keys(scheme).sort()).toEqual(['description', 'scheme', 'type']);
    expect(scheme).toMatchObject({ type: 'http', scheme: 'bearer' });
    // Swagger UI's Authorize dialog shows it: it says where the development token is.
    expect(scheme.description).toMatch(
      /^An API token from API_TOKENS\. In development .*dev-token/,
    );
    const operations = Object.values(served.paths).flatMap((p) => Object.values(p));
    expect(operations.map((o) => o.operationId).sort()).toEqual([
      'createPlant',
      'deletePlant',
      'getPlant',
      'listPlants',
    ]);
    for (const operation of operations) expect(operation.security).toEqual([{ bearerAuth: [] }]);
  });

  it('GET / on the API port points to /docs and /openapi.json, without a token; not on the others', async () => {
    const index = await call(`${app.apiUrl}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/^application\/json/);
    const links = index.json as { docs: string; openapi: string };
    expect(links).toMatchObject({ docs: '/docs', openapi: '/openapi.json' });
    expect((await call(`${app.apiUrl}${links.openapi}`)).status).toBe(200);
    expect((await call(`${app.apiUrl}${links.docs}/`)).status).toBe(200);
    // The document's operations are the plant API's alone.
    expect(Object.keys(served.paths)).not.toContain('/');
    expect((await call(`${app.healthUrl}/`)).status).toBe(404);
    expect((await call(`${app.metricsUrl}/`)).status).toBe(404);
  });

  it('names the seed schemas with their limits', () => {
    const { Plant, NewPlant, Error: ErrorSchema } = served.components.schemas;
    expect(Object.keys(Plant!.properties).sort()).toEqual(['name', 'tag']);
    expect(Plant!.required).toEqual(['name']);
    expect(NewPlant!.properties.id).toMatchObject({ type: 'integer', format: 'int64' });
    expect(NewPlant!.required?.sort()).toEqual(['id', 'name']);
    expect(NewPlant!.properties.name).toMatchObject({ minLength: 1, maxLength: 256 });
    expect(NewPlant!.properties.tag).toMatchObject({ maxLength: 64 });
    expect(ErrorSchema!.properties.error).toMatchObject({ type: 'integer', format: 'int32' });
    expect(ErrorSchema!.required?.sort()).toEqual(['error', 'message']);
  });

  it('documents POST /plants: 200 Plant, 400 "unexpected error" with the Error body, and every other status', () => {
    const post = served.paths['/plants']!.post!;
    expect(post.responses['200']!.content!['application/json']!.schema.$ref).toBe(
      '#/components/schemas/Plant',
    );
    expect(post.responses['400']!.description).toBe('unexpected error');
    for (const status of ['400', '401', '409', '413', '415', '429', '500', '503']) {
      expect(post.responses[status]!.content!['application/json']!.schema.$ref, status).toBe(
        '#/components/schemas/Error',
      );
    }
    expect(Object.keys(served.paths['/plants/{id}']!.get!.responses)).toContain('404');
  });

  it('documents GET /plants as the upstream does: an array, limit any int32, and a Link header', () => {
    const get = served.paths['/plants']!.get!;
    const ok = get.responses['200']!;
    expect(ok.content!['application/json']!.schema).toEqual({
      type: 'array',
      items: { $ref: '#/components/schemas/PlantRecord' },
    });
    expect(ok.headers!.Link!.schema.type).toBe('string');
    expect(ok.headers!.Link!.description).toMatch(/rel="next"/);
    const limit = get.parameters!.find((p) => p.name === 'limit')!;
    expect(limit.schema).toEqual({ type: 'integer', format: 'int32', default: 20 });
    expect(get.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual([
      'query:limit',
      'query:cursor',
    ]);
  });

  // Swagger UI pre-fills an example into "Try it out": a cursor example skipped the first plants.
  it('gives no optional parameter an example, so Swagger UI sends only what the user types', () => {
    const examples = Object.entries(served.paths).flatMap(([path, operations]) =>
      Object.values(operations).flatMap((operation) =>
        (operation.parameters ?? [])
          .filter((p) => p.required !== true && ('example' in p || 'example' in p.schema))
          .map((p) => `${operation.operationId} ${path} ${p.name}`),
      ),
    );
    expect(examples).toEqual([]);
  });

  it('declares the upstream webhook /plant/webhook with the NewPlant body and the Standard Webhooks headers', () => {
    const post = served.webhooks!['/plant/webhook']!.post!;
    expect(post.requestBody!.content['application/json']!.schema.$ref).toBe(
      '#/components/schemas/NewPlant',
    );
    expect(post.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual([
      'header:webhook-id',
      'header:webhook-timestamp',
      'header:webhook-signature',
    ]);
    expect(Object.keys(post.responses)).toContain('200');
  });
});
