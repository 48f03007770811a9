/**
 * A client generated from the upstream "OpenAPI Plant Store" document, used the way its users
 * use it: openapi-typescript's types (test/support/upstream-plant-store.d.ts) and openapi-fetch,
 * against the real app. `npm run typecheck` checks every call below against the upstream's types;
 * the body shapes are checked here at run time, since TypeScript's types vanish there.
 *
 * The types are committed, not generated when the tests run: the type check is the point of a
 * generated client, and it runs before vitest and without ../shared. The first test regenerates
 * them from ../shared/upstream/plant-store.openapi.json (the upstream file is never copied into
 * the project) and fails if they drifted. To regenerate:
 *   npx openapi-typescript ../shared/upstream/plant-store.openapi.json -o test/support/upstream-plant-store.d.ts
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import createClient, { type Client } from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, type RunningApp, startApp, tempDir } from './support/app-process.js';
import { storeVariants } from './support/postgres.js';
import type { components, paths } from './support/upstream-plant-store.js';

type Plant = components['schemas']['Plant'];

const UPSTREAM = join(ROOT, '../shared/upstream/plant-store.openapi.json');
const TYPES = join(ROOT, 'test/support/upstream-plant-store.d.ts');
const upstreamMissing = existsSync(UPSTREAM) ? undefined : `${UPSTREAM} is not there`;

// In CI the upstream document must be there; elsewhere its absence only skips the drift check.
describe.skipIf(upstreamMissing !== undefined && !process.env.CI)(
  `the upstream client's types${upstreamMissing ? ` (skipped: ${upstreamMissing})` : ''}`,
  () => {
    it('are what openapi-typescript makes of the upstream document today', () => {
      expect(upstreamMissing).toBeUndefined();
      const out = join(tempDir('upstream-types'), 'plant-store.d.ts');
      const cli = join(ROOT, 'node_modules/openapi-typescript/bin/cli.js');
      const run = spawnSync(process.execPath, [cli, UPSTREAM, '-o', out], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe(readFileSync(TYPES, 'utf8'));
    });
  },
);

/** The upstream's Plant, checked at run time: a name, maybe a tag (our `id` may come along). */
function expectPlant(value: unknown): asserts value is Plant {
  expect(value).toMatchObject({ name: expect.any(String) as unknown });
  const tag = (value as { tag?: unknown }).tag;
  expect(tag === undefined || typeof tag === 'string').toBe(true);
}

describe.each(storeVariants)('a client generated from the upstream document, on $name', (store) => {
  let app: RunningApp;
  let client: Client<paths>;
  beforeAll(async () => {
    app = await startApp({ env: await store.env() });
    client = createClient<paths>({
      baseUrl: app.apiUrl,
      headers: { Authorization: `Bearer ${app.token}` },
    });
  });
  afterAll(async () => {
    await app.stop();
  });

  it('creates plants and gets the upstream Plant back', async () => {
    for (const body of [
      { id: 1, name: 'Monstera', tag: 'aroid' },
      { id: 2, name: 'Fern' },
      { id: 3, name: 'Pothos', tag: 'aroid' },
    ]) {
      const { data, error, response } = await client.POST('/plants', { body });
      expect(error).toBeUndefined();
      expect(response.status).toBe(200);
      expectPlant(data);
      expect(data).toEqual(body.tag ? { name: body.name, tag: body.tag } : { name: body.name });
    }
  });

  it('lists plants as the upstream array, for every limit the upstream allows', async () => {
    const { data, error, response } = await client.GET('/plants');
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(Array.isArray(data)).toBe(true);
    data!.forEach(expectPlant);
    expect(data!.map((plant) => plant.name)).toEqual(['Monstera', 'Fern', 'Pothos']);

    const two = await client.GET('/plants', { params: { query: { limit: 2 } } });
    expect(two.data!.map((plant) => plant.name)).toEqual(['Monstera', 'Fern']);
    for (const limit of [1000, 2_147_483_647]) {
      const all = await client.GET('/plants', { params: { query: { limit } } });
      expect(all.response.status).toBe(200);
      expect(all.data).toHaveLength(3);
    }
    for (const limit of [0, -1, -2_147_483_648]) {
      const none = await client.GET('/plants', { params: { query: { limit } } });
      expect(none.response.status).toBe(200);
      expect(none.data).toEqual([]);
    }
  });

  it('deletes a plant with 204, after which the list no longer has it', async () => {
    const { data, error, response } = await client.DELETE('/plants/{id}', {
      params: { path: { id: 2 } },
    });
    expect(error).toBeUndefined();
    expect(response.status).toBe(204);
    expect(data).toBeUndefined();
    const after = await client.GET('/plants');
    expect(after.data!.map((plant) => plant.name)).toEqual(['Monstera', 'Pothos']);
  });

  it('gets the upstream Error body for a bad request', async () => {
    const { data, error, response } = await client.POST('/plants', {
      body: { id: 4, name: '' },
    });
    expect(data).toBeUndefined();
    expect(response.status).toBe(400);
    const body: components['schemas']['Error'] = error!;
    expect(body).toEqual({ error: 400, message: expect.any(String) as unknown });
  });
});
