/** The stores a run measures, and the PostgreSQL databases it creates (and drops) for them. */
import { databaseUrl, dropDatabase, findPostgres, recreateDatabase } from './stores.mjs';

/**
 * `opts.stores` minus PostgreSQL when no server is found (recorded in `meta.postgres` when one
 * is); `pgDatabase(name)` makes a fresh `plantbench_<name>` and returns its URL.
 */
export async function openStores(opts, meta) {
  let postgres;
  if (opts.stores.includes('pg')) {
    postgres = await findPostgres();
    if (!postgres) console.warn('no PostgreSQL server found: the PostgreSQL runs are skipped');
    else meta.postgres = postgres.info;
  }
  const stores = opts.stores.filter((s) => s === 'sqlite' || (s === 'pg' && postgres));
  const databases = [];
  const pgDatabase = async (name) => {
    const full = `plantbench_${name}`;
    await recreateDatabase(postgres.adminUrl, full);
    databases.push(full);
    return databaseUrl(postgres.adminUrl, full);
  };
  const dropDatabases = async () => {
    if (!postgres) return;
    for (const name of databases) await dropDatabase(postgres.adminUrl, name).catch(() => {});
  };
  return { stores, pgDatabase, dropDatabases };
}
