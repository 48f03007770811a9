import type { ColumnType } from 'kysely';

/**
 * The one typed schema both dialects share. ids are 64-bit integers in the database (SQLite
 * INTEGER, PostgreSQL BIGINT) and `bigint` in TypeScript from end to end, never a JS number.
 */
export interface PlantsTable {
  id: ColumnType<bigint, bigint, never>;
  name: string;
  tag: string | null;
}

export interface Database {
  plants: PlantsTable;
}
