import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

// The addon fails to load as it does when `npm ci` ran under another Node.js.
vi.mock('better-sqlite3', () => ({
  default: class {
    constructor() {
      const error = new Error(
        "The module 'better_sqlite3.node'\nwas compiled against a different Node.js version",
      );
      throw Object.assign(error, { code: 'ERR_DLOPEN_FAILED' });
    }
  },
}));

const { openSqlite } = await import('./sqlite.connection.js');

describe('openSqlite', () => {
  it('names the driver and the fix, not DATA_DIR, when the addon was built for another Node', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sqlite-addon-'));
    expect(() => openSqlite(join(dir, 'plants.sqlite'), dir)).toThrow(
      `cannot load the SQLite driver (better-sqlite3) on Node.js ${process.version}: it was built for another Node.js version or platform; run \`npm rebuild better-sqlite3\` (or \`npm ci\`) with this Node.js (The module 'better_sqlite3.node' was compiled against a different Node.js version)`,
    );
    rmSync(dir, { recursive: true, force: true });
  });
});
