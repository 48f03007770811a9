import { sql } from 'kysely';

/**
 * Now in epoch ms by PostgreSQL's clock: the one clock every replica and worker shares, for due
 * times, leases and ages (their own clocks may disagree by minutes). clock_timestamp(), not
 * now(): the statement's time, not its transaction's start.
 */
export const databaseNowMs = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;
