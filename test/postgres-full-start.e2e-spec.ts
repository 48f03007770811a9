import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';
import {
  type PostgresServer,
  clusterToolsAvailable,
  startLoneServer,
} from './support/postgres-cluster.js';
import { untilHealthy } from './support/service-process.js';

const PASSWORD = 'hunter2-not-for-logs';
const FULL_LINE = /^.*PostgreSQL is full \(SQLSTATE 53300\), waiting for a connection.*$/gm;

/** Opens connections until the server answers 53300 (every slot taken); they stay open. */
async function fill(server: PostgresServer): Promise<pg.Client[]> {
  const held: pg.Client[] = [];
  for (;;) {
    const client = new pg.Client({ connectionString: server.url });
    try {
      await client.connect();
      held.push(client);
    } catch (error) {
      expect((error as { code?: string }).code).toBe('53300');
      return held;
    }
  }
}

/** Resolves once the app has logged `count` "full" lines; throws if it exits first. */
async function untilFullLines(app: RunningApp, count: number): Promise<string[]> {
  for (;;) {
    const lines = app.output().match(FULL_LINE) ?? [];
    if (lines.length >= count) return lines;
    if (app.child.exitCode !== null || app.child.signalCode !== null) {
      throw new Error(`exited while PostgreSQL was full:\n${app.output()}`);
    }
    await Promise.race([app.exited, new Promise((resolve) => setTimeout(resolve, 100))]);
  }
}

/**
 * A replica started while PostgreSQL has no free connection (an HPA scale-up under load): it
 * waits past DATABASE_STARTUP_TIMEOUT_SECONDS, saying why, and serves once a connection frees.
 */
describe.skipIf(!clusterToolsAvailable)('PostgreSQL full at start (53300)', () => {
  let lone: Awaited<ReturnType<typeof startLoneServer>>;
  let held: pg.Client[] = [];
  let app: RunningApp | undefined;

  beforeAll(async () => {
    lone = await startLoneServer(['-c max_connections=6']);
  });
  afterAll(async () => {
    await app?.stop();
    await Promise.all(held.map((client) => client.end().catch(() => undefined)));
    await lone?.remove();
  });

  it('waits, saying so without the password, and serves once a connection is free', async () => {
    held = await fill(lone.server);
    const url = new URL(lone.server.url);
    url.password = PASSWORD;
    app = await startApp({
      env: { DATABASE_URL: url.toString(), DATABASE_STARTUP_TIMEOUT_SECONDS: '1' },
      waitForHealth: false,
    });
    // Tries at 0, 0.25, 0.75 and 1.75 s: the last past the 1 s an unreachable server gets.
    const lines = await untilFullLines(app, 4);
    for (const line of lines) {
      expect(JSON.parse(line)).toMatchObject({
        target: `127.0.0.1:${lone.server.port}/postgres`,
        reason: 'sorry, too many clients already',
      });
    }
    expect(app.output()).not.toContain(PASSWORD);

    await Promise.all(held.splice(0).map((client) => client.end()));
    await untilHealthy(app, 'the replica');
    const created = await call(`${app.apiUrl}/plants`, {
      method: 'POST',
      token: app.token,
      body: '{"id": 1, "name": "after the wait"}',
    });
    expect(created.status).toBe(200);
  }, 60_000);
});
