import type { RunningApp } from './app-process.js';

/**
 * Started with `waitForHealth: false`: resolves with the exit code once the process exits, or
 * 'healthy' as soon as GET /health answers 200, or 'still starting' after `boundMs`, a bound
 * far above a normal start (about 1 s) that only proves the process is not stuck retrying.
 * A process still running afterwards is killed.
 */
export async function startOutcome(app: RunningApp, boundMs = 20_000): Promise<number | string> {
  let exited: number | string | undefined;
  void app.exited.then((code) => (exited = code));
  const deadline = Date.now() + boundMs;
  let outcome: number | string | undefined;
  while (outcome === undefined) {
    if (exited !== undefined) outcome = exited;
    else if (Date.now() > deadline) outcome = 'still starting';
    else {
      const status = await fetch(`${app.healthUrl}/health`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) outcome = 'healthy';
      else await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (typeof outcome === 'string' && exited === undefined) await app.stop('SIGKILL');
  return outcome;
}
