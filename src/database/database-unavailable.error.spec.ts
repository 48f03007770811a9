import { describe, expect, it } from 'vitest';
import { ServiceUnavailableError } from '../common/errors/service-unavailable.error.js';
import {
  DatabaseUnavailableError,
  isCorruption,
  isUnavailable,
} from './database-unavailable.error.js';

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
    ['57P03', true, false], // cannot_connect_now: starting up or in recovery
    ['08006', true, false], // connection_failure
    ['25006', true, false], // read_only_sql_transaction: a standby right after a failover
    ['25001', false, false], // active_sql_transaction: a bug, not an outage
    ['ECONNRESET', true, false],
    ['ECONNREFUSED', true, false],
    ['23505', false, false], // unique_violation: a bad row, not an outage
    ['28P01', false, false], // a refused login is a start-up error, not a 503
  ])('%s: unavailable %s, corruption %s', (code, unavailable, corruption) => {
    expect(isUnavailable(withCode(code))).toBe(unavailable);
    expect(isCorruption(withCode(code))).toBe(corruption);
  });
});

describe('DatabaseUnavailableError', () => {
  it('is the common 503 error, with the database answer and log line', () => {
    const error = new DatabaseUnavailableError(new Error('connect ECONNREFUSED'));
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error.answer).toBe('the database is unavailable; try again later');
    expect(error.logLine).toBe('database unavailable');
    expect(error.message).toBe('the database is unavailable');
  });
});
