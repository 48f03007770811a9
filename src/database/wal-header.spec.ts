import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isSuccessor, parseWalHeader, readWalHeaderBytes } from './wal-header.js';

/** A store open as the service opens it, with one commit in its WAL. */
function openStore() {
  const file = join(mkdtempSync(join(tmpdir(), 'wal-header-')), 'plants.sqlite');
  const db = new BetterSqlite3(file);
  db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL;');
  db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1);');
  const header = () => parseWalHeader(readWalHeaderBytes(`${file}-wal`));
  return { db, header };
}

function flip(bytes: Buffer, at: number, bit: number): Buffer {
  bytes[at] = bytes[at]! ^ bit;
  return bytes;
}

describe('parseWalHeader', () => {
  it("verifies SQLite's own header", () => {
    const { db, header } = openStore();
    expect(header()).toMatchObject({ checkpoint: 0 });
    db.close();
  });

  it.each([
    ['zeroed', (b: Buffer) => b.fill(0)],
    ['with a bit flipped in the magic', (b: Buffer) => flip(b, 3, 0x01)],
    ['with a bit flipped in salt-2', (b: Buffer) => flip(b, 21, 0x10)],
    ['with a bit flipped in the checksum', (b: Buffer) => flip(b, 31, 0x80)],
    ['cut short', (b: Buffer) => b.subarray(0, 31)],
  ])('refuses a header %s', (_name, damage) => {
    const { db } = openStore();
    const bytes = readWalHeaderBytes(`${db.name}-wal`);
    expect(parseWalHeader(bytes)).toBeDefined();
    expect(parseWalHeader(damage(bytes))).toBeUndefined();
    db.close();
  });
});

describe('isSuccessor', () => {
  it("accepts SQLite's restart of the WAL after a checkpoint, not another WAL's header", () => {
    const { db, header } = openStore();
    const first = header()!;
    db.exec('PRAGMA wal_checkpoint(PASSIVE); INSERT INTO t VALUES (2);');
    const restarted = header()!;
    expect(restarted.checkpoint).toBe(first.checkpoint + 1);
    expect(isSuccessor(first, restarted)).toBe(true);
    expect(isSuccessor(first, first)).toBe(true);
    const other = openStore();
    expect(isSuccessor(first, other.header()!)).toBe(false);
    expect(isSuccessor(restarted, first)).toBe(false);
    db.close();
    other.db.close();
  });
});
