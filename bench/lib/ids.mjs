/**
 * Plant ids for the load. Request n gets id (n * ODD) mod 2^53: unique for every n, spread
 * over the whole safe-integer range (so inserts land all over the primary-key B-tree, as
 * client-chosen ids do, not only at its right edge) and still plain JSON numbers.
 *
 * Ranges of n: 1..preload for rows bulk-loaded before a start, SEED_BASE.. for the plants each
 * target gets before the first round (read back by GET), RUN_BASE.. for the runs.
 */
const MASK = 2n ** 53n - 1n;
const ODD = 5_566_755_982_691_451n;

export const SEED_BASE = 50_000_000;
export const RUN_BASE = 100_000_000;
/** More requests than any one run makes: each run takes a fresh block of n. */
export const RUN_BLOCK = 10_000_000;

/** `mode` 'sequential' (BENCH_IDS / --ids) makes the id n itself: appends only. */
export function plantId(n, mode = 'spread') {
  return mode === 'sequential' ? n : Number((BigInt(n) * ODD) & MASK);
}

export function plantBody(n, mode) {
  return `{"id":${plantId(n, mode)},"name":"plant ${n}","tag":"bench"}`;
}
