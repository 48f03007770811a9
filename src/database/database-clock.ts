import { sql } from 'kysely';

/**
 * Now in epoch ms by PostgreSQL's clock, which every replica shares (theirs may disagree by
 * minutes); clock_timestamp(): the statement's time, not its transaction's.
 */
export const databaseNowMs = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;
