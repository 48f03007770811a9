import { DEFAULT_BACKOFF } from '../../common/retry/backoff.js';
import type { StderrLogOptions } from './stderr-log.js';
import type { StdoutLimits } from './stdout-reader.js';

/** `crashLoopAfter` failures in a row: `crash-looping`, longest delay till up `stableUpMs`. */
export const DEFAULT_RUNNER_TIMINGS = {
  initializeTimeoutMs: 30_000,
  pingIntervalMs: 30_000,
  pingTimeoutMs: 10_000,
  stableUpMs: 5 * 60_000,
  crashLoopAfter: 5,
  killGraceMs: 5_000,
  backoff: DEFAULT_BACKOFF,
};

export type RunnerTimings = typeof DEFAULT_RUNNER_TIMINGS & {
  stderr?: Partial<StderrLogOptions>;
  stdout?: Partial<StdoutLimits>;
};
