/**
 * Starts every target of a run once, in the order the report's rows show them: per store the
 * service (and service-b with --compare), the raw baselines and the preloaded store; then
 * json-server and Prism. Each is pushed onto `targets` as soon as it is up, so the caller can
 * stop what did start when a later one fails.
 */
import { join } from 'node:path';
import { plantId } from './ids.mjs';
import { preloadPostgres, preloadSqlite } from './stores.mjs';
import { startJsonServer, startPrism, startRaw, startService } from './targets.mjs';

const JSON_SERVER_ROWS = 100_000;

export async function startTargets({ opts, stores, dataRoot, build, token, pgDatabase, targets }) {
  // The bundle, as `npm start` and the image run it.
  const main = opts.service ?? join(build, 'dist/bundle/main.js');
  for (const store of stores) {
    const dir = (name) => join(dataRoot, `${name}-${store}`);
    const url = async (name) => (store === 'pg' ? pgDatabase(name) : undefined);
    const add = async (role, label, start, name = role) => {
      const t = { role, store, name: `${name}@${store}`, label: `${label} (${store})` };
      console.log(`starting ${t.name}`);
      Object.assign(t, await start());
      targets.push(t);
    };
    await add('service', 'service', async () => ({
      ...(await startService({
        name: 'service',
        main,
        dir: dir('service'),
        token,
        databaseUrl: await url('svc'),
      })),
      seeded: true,
    }));
    if (opts.compare) {
      const label = [
        opts.compare === 'same' ? '' : (opts.compareLabel ?? opts.compare),
        ...opts.compareArgs,
        ...Object.entries(opts.compareEnv).map(([k, v]) => `${k}=${v}`),
      ]
        .filter(Boolean)
        .join(' ');
      await add('service-b', `service-b: ${label}`, async () => ({
        ...(await startService({
          name: 'service-b',
          main: opts.compare === 'same' ? main : opts.compare,
          dir: dir('service-b'),
          token,
          databaseUrl: await url('svc_b'),
          nodeArgs: opts.compareArgs,
          env: opts.compareEnv,
        })),
        seeded: true,
      }));
      for (const [i, other] of (opts.compareMore ?? []).entries()) {
        const name = `service-${String.fromCharCode(99 + i)}`;
        const start = async () => ({
          ...(await startService({
            name,
            main: other.main,
            dir: dir(name),
            token,
            databaseUrl: await url(name.replace('-', '_')),
            nodeArgs: opts.compareArgs,
            env: opts.compareEnv,
          })),
          seeded: true,
        });
        await add('service-b', `${name}: ${other.label}`, start, name);
      }
    }
    if (opts.baselines) {
      for (const [role, script, tag] of [
        ['raw-each', 'raw-each.mjs', 'a1'],
        ['raw-group', 'raw-group.mjs', 'a2'],
        ['nest-floor', 'nest-floor.mjs', 'a3'],
      ].filter(([role]) => opts.baselineList.includes(role))) {
        await add(role, `${role} (${tag})`, async () => ({
          ...(await startRaw({
            name: role,
            script,
            build,
            dir: dir(role),
            token,
            databaseUrl: await url(role.replace('-', '_')),
          })),
          seeded: true,
        }));
      }
    }
    if (opts.preload > 0) {
      const rows = opts.preload;
      const label = rows % 1_000_000 === 0 ? `${rows / 1_000_000}M` : `${rows}`;
      await add('service-1m', `service, ${label} plants stored`, () =>
        startPreloaded({
          ids: opts.ids,
          store,
          main,
          dir: dir('service-1m'),
          token,
          rows,
          url: () => url('svc_1m'),
        }),
      );
    }
  }
  if (opts.baselines && opts.baselineList.some((b) => b === 'json-server' || b === 'prism'))
    await startJsonBaselines({ opts, dataRoot, build, token, targets });
}

/** json-server empty (restarted before each of its runs) and with 100k plants, and Prism. */
async function startJsonBaselines({ opts, dataRoot, build, token, targets }) {
  const plants = Array.from({ length: JSON_SERVER_ROWS }, (_, i) => ({
    id: plantId(i + 1, opts.ids),
    name: `plant ${i + 1}`,
    tag: 'bench',
  }));
  const jsonStore = { store: null };
  console.log('starting json-server (empty), json-server (100k) and prism');
  const emptyDir = join(dataRoot, 'json-server-empty');
  const empty = {
    ...jsonStore,
    role: 'json-server-empty',
    name: 'json-server-empty',
    label: 'json-server 0.17.4, empty',
    ...(await startJsonServer({ name: 'json-server-empty', dir: emptyDir, plants: [] })),
  };
  // Restarted before each of its runs, so every run starts on an empty store.
  empty.restart = async () => {
    await empty.proc.stop();
    Object.assign(
      empty,
      await startJsonServer({ name: 'json-server-empty', dir: emptyDir, plants: [] }),
    );
  };
  targets.push(
    empty,
    {
      ...jsonStore,
      role: 'json-server-100k',
      name: 'json-server-100k',
      label: 'json-server 0.17.4, 100k plants',
      ...(await startJsonServer({
        name: 'json-server-100k',
        dir: join(dataRoot, 'json-server-100k'),
        plants,
      })),
    },
    {
      ...jsonStore,
      role: 'prism',
      name: 'prism',
      label: 'Prism 5.14.2 mock',
      ...(await startPrism({
        name: 'prism',
        dir: join(dataRoot, 'prism'),
        token,
        spec: join(build, 'openapi.json'),
      })),
    },
  );
}

/**
 * The service on a store holding `rows` plants: a first start creates the schema (its ready
 * time is the empty store's), the rows are bulk-loaded while it is stopped, then it starts again.
 */
async function startPreloaded({ store, main, dir, token, rows, url, ids }) {
  const databaseUrl = await url();
  const first = await startService({ name: 'service-1m', main, dir, token, databaseUrl });
  await first.proc.stop();
  const loadStarted = Date.now();
  const count =
    store === 'pg'
      ? await preloadPostgres(databaseUrl, rows, ids)
      : preloadSqlite(first.dataFile, rows, ids);
  console.log(`  ${count} plants preloaded in ${((Date.now() - loadStarted) / 1000).toFixed(1)} s`);
  const service = await startService({ name: 'service-1m', main, dir, token, databaseUrl });
  return { ...service, migrationStart: { readyMs: first.proc.readyMs } };
}
