import { describe, expect, it } from 'vitest';
import { refusalOf } from './postgres.connection.js';

const withCode = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('refusalOf', () => {
  it.each([
    ['28P01', 'password authentication failed for user "plants"', 'refused the login'],
    ['28000', 'role "nobody" does not exist', 'refused the login'],
    ['3D000', 'database "plants" does not exist', 'has no such database'],
  ])('%s ends the start at once, naming the target and the SQLSTATE', (code, message, says) => {
    const refusal = refusalOf(withCode(code, message), 'db:5432/plants');
    expect(refusal?.message).toContain(`PostgreSQL at db:5432/plants ${says}`);
    expect(refusal?.message).toContain(`SQLSTATE ${code}: ${message}`);
  });

  it.each([['ECONNREFUSED'], ['57P03'], ['08006']])('%s is retried (undefined)', (code) => {
    expect(refusalOf(withCode(code, 'x'), 'db:5432/plants')).toBeUndefined();
  });
});
