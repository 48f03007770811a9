import { describe, expect, it } from 'vitest';
import { isCorruption, isUnavailable } from './database-unavailable.error.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isUnavailable and isCorruption', () => {
  it.each([
    ['SQLITE_FULL', true, false],
    ['SQLITE_IOERR_WRITE', true, false],
    ['SQLITE_CORRUPT', true, true],
    ['SQLITE_CORRUPT_INDEX', true, true],
    ['SQLITE_NOTADB', true, true],
    ['SQLITE_CONSTRAINT_PRIMARYKEY', false, false],
    ['53100', true, false], // PostgreSQL disk_full
    ['57P01', true, false], // admin_shutdown
    ['ECONNREFUSED', true, false],
    ['23505', false, false], // unique_violation: a bad row, not an outage
    ['28P01', false, false], // a refused login is a start-up error, not a 503
  ])('%s: unavailable %s, corruption %s', (code, unavailable, corruption) => {
    expect(isUnavailable(withCode(code))).toBe(unavailable);
    expect(isCorruption(withCode(code))).toBe(corruption);
  });
});
