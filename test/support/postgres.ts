import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The PostgreSQL server the e2e tests use, from TEST_DATABASE_URL (`.ci/run` installs and
 * starts one on 127.0.0.1). Without it the PostgreSQL variants are skipped, unless
 * REQUIRE_POSTGRES=1 (CI) makes that a failure.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';
export const postgresAvailable = TEST_DATABASE_URL !== '';
if (!postgresAvailable && process.env.REQUIRE_POSTGRES === '1') {
  throw new Error('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set');
}

/** A new empty database on the test server; returns its URL. */
export async function createTestDatabase(): Promise<string> {
  const name = `plant_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface StoreVariant {
  name: 'sqlite' | 'postgres';
  /** Environment for startApp: DATABASE_URL for PostgreSQL, nothing for the embedded store. */
  env(): Promise<Record<string, string>>;
}

export const storeVariants: StoreVariant[] = [
  { name: 'sqlite', env: () => Promise.resolve({}) },
  ...(postgresAvailable
    ? [
        {
          name: 'postgres' as const,
          env: async () => ({ DATABASE_URL: await createTestDatabase() }),
        },
      ]
    : []),
];
