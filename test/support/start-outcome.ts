import type { RunningApp } from './app-process.js';
import { startOutcomeOf } from './service-process.js';

/**
 * Started with `waitForHealth: false`: resolves with the exit code once the process exits, or
 * 'healthy' as soon as GET /health answers 200, or 'still starting' after `boundMs`, a bound
 * far above a normal start (about 1 s) that only proves the process is not stuck retrying.
 * A process still running afterwards is killed.
 */
export async function startOutcome(app: RunningApp, boundMs = 20_000): Promise<number | string> {
  const outcome = await startOutcomeOf(app, boundMs);
  if (typeof outcome === 'object' && 'exited' in outcome) return outcome.exited;
  await app.stop('SIGKILL');
  return outcome === 'still starting' ? outcome : 'healthy';
}
