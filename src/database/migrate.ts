import { type Kysely, Migrator } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from './database.types.js';
import { migrationProvider } from './migrations/index.js';

/** Kysely's Migrator takes a lock: replicas starting at once apply each migration once. */
export async function migrateToLatest(db: Kysely<Database>, logger: Logger): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  for (const result of results ?? []) {
    if (result.status === 'Success')
      logger.info({ migration: result.migrationName }, 'migration applied');
    if (result.status === 'Error')
      logger.error({ migration: result.migrationName }, 'migration failed');
  }
  if (error) throw error instanceof Error ? error : new Error('migration failed', { cause: error });
}
