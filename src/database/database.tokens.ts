export const KYSELY = Symbol('KYSELY');
