import { type AliasedRawBuilder, sql } from 'kysely';

/**
 * Rows as a table, `(values (...), ...) as alias(column, ...)`: Kysely's recipe for what it has
 * no builder for. Every value is a parameter; PostgreSQL takes untyped parameters as text, so
 * `casts` names the type of each column that is not.
 */
export function valuesTable<R extends Record<string, unknown>, A extends string>(
  rows: readonly R[],
  alias: A,
  casts: Partial<Record<keyof R & string, 'bigint'>> = {},
): AliasedRawBuilder<R, A> {
  const columns = Object.keys(rows[0] ?? {}) as (keyof R & string)[];
  const value = (row: R, column: keyof R & string) => {
    const cast = casts[column];
    return cast ? sql`cast(${row[column]} as ${sql.raw(cast)})` : sql`${row[column]}`;
  };
  const tuples = rows.map((row) => sql`(${sql.join(columns.map((c) => value(row, c)))})`);
  const name = sql`${sql.ref(alias)}(${sql.join(columns.map((c) => sql.ref(c)))})`;
  return sql<R>`(values ${sql.join(tuples)})`.as<A>(name);
}
