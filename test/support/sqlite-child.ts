import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const betterSqlite3 = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Runs `body` (a function body given `db`, an open better-sqlite3 Database on `file`) in a child
 * Node process and returns what it returns, through JSON. Not in the test process: with Node 24,
 * a better-sqlite3 Database garbage-collected inside a vitest worker aborts the worker (its
 * destructor asserts on a missing Environment, even after close()), which kills the whole file.
 */
export function withSqliteFile<T>(file: string, body: string): T {
  const code = [
    `const Database = require(${JSON.stringify(betterSqlite3)});`,
    'const db = new Database(process.argv[1], { fileMustExist: true });',
    'let result;',
    `try { result = (function (db) { ${body} })(db); } finally { db.close(); }`,
    'process.stdout.write(JSON.stringify(result === undefined ? null : result));',
  ].join('\n');
  const output = execFileSync(process.execPath, ['-e', code, file], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(output) as T;
}
