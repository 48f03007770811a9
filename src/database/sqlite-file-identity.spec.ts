import {
  copyFileSync,
  mkdtempSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteFileIdentity } from './sqlite-file-identity.js';

function files(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'file-identity-')), 'plants.sqlite');
  writeFileSync(file, 'db');
  writeFileSync(`${file}-wal`, 'wal');
  return file;
}

describe('SqliteFileIdentity', () => {
  it('reports nothing while both files are in place, even rewritten in place', () => {
    const file = files();
    const identity = new SqliteFileIdentity(file);
    writeFileSync(file, 'more data');
    expect(identity.problem()).toBeUndefined();
  });

  it.each([
    ['the file deleted', (f: string) => rmSync(f), /database file .* was deleted/],
    [
      'the file replaced',
      (f: string) => {
        copyFileSync(f, `${f}.new`);
        renameSync(`${f}.new`, f);
      },
      /database file .* was replaced/,
    ],
    ['the WAL deleted', (f: string) => rmSync(`${f}-wal`), /WAL file .*-wal was deleted/],
    [
      'the WAL replaced',
      (f: string) => {
        copyFileSync(`${f}-wal`, `${f}.new`);
        renameSync(`${f}.new`, `${f}-wal`);
      },
      /WAL file .*-wal was replaced/,
    ],
    [
      'the file truncated in place',
      (f: string) => truncateSync(f, 0),
      /database file .* was truncated .*\(0 bytes, it held 2\)/,
    ],
    [
      'the WAL truncated in place',
      (f: string) => truncateSync(`${f}-wal`, 1),
      /WAL file .*-wal was truncated .*\(1 bytes, it held 3\)/,
    ],
  ])('names %s', (_, act, says) => {
    const file = files();
    const identity = new SqliteFileIdentity(file);
    act(file);
    expect(identity.problem()).toMatch(says);
  });

  it('compares with the largest size seen: a file that grew, then shrank, is truncated', () => {
    const file = files();
    const identity = new SqliteFileIdentity(file);
    writeFileSync(file, 'a larger database');
    expect(identity.problem()).toBeUndefined();
    writeFileSync(file, 'smaller');
    expect(identity.problem()).toMatch(/was truncated .*\(7 bytes, it held 17\)/);
  });
});
