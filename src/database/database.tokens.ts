/** Injection token of the process's Kysely<Database> instance. */
export const KYSELY = Symbol('KYSELY');
