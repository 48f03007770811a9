import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StatementCachingDatabase } from './statement-cache.js';

describe('StatementCachingDatabase', () => {
  it('prepares each SQL text once and hands the same statement back', () => {
    const raw = new BetterSqlite3(':memory:');
    const database = new StatementCachingDatabase(raw);
    raw.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    const first = database.prepare('INSERT INTO t (id) VALUES (?)');
    expect(database.prepare('INSERT INTO t (id) VALUES (?)')).toBe(first);
    first.run([1]);
    database.prepare('INSERT INTO t (id) VALUES (?)').run([2]);
    expect(database.prepare('SELECT count(*) AS n FROM t').all([])).toEqual([{ n: 2 }]);
    expect(database.prepare('SELECT 1')).not.toBe(first);
    database.close();
    expect(raw.open).toBe(false);
  });
});
