/** The bench folder and the checkout whose build it measures. */
import { join } from 'node:path';

export const BENCH = join(import.meta.dirname, '..');
export const ROOT = join(BENCH, '..');
