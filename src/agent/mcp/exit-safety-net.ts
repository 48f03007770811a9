import { constants } from 'node:os';

/**
 * The last defence against orphaned MCP servers, whose process groups are detached: SIGKILL to
 * every group on 'exit' and on each catchable signal that would end the process, unless the
 * application handles that signal itself (SIGTERM's graceful shutdown). The signal is then
 * raised again, so the process ends as the sender meant (exit status 128 + n). Left alone:
 * SIGUSR1 (inspector), SIGPIPE, SIGPROF and SIGVTALRM (V8's profiler sends them to itself),
 * SIGABRT and SIGTRAP (no JS runs then), and what cannot be caught or handled safely.
 */
export const FATAL_CATCHABLE_SIGNALS: readonly NodeJS.Signals[] = [
  'SIGHUP',
  'SIGINT',
  'SIGQUIT',
  'SIGTERM',
  'SIGUSR2',
  'SIGALRM',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGPWR',
  'SIGSTKFLT',
  'SIGIO',
];

/** Installs the net; the function it returns removes it (after a graceful shutdown). */
export function installExitSafetyNet(kill: () => void): () => void {
  const signals = FATAL_CATCHABLE_SIGNALS.filter(
    (signal) => constants.signals[signal] !== undefined,
  );
  const onSignal = (signal: NodeJS.Signals) => {
    // Handled by the application (a graceful shutdown, a reload): not ours to end the process.
    if (process.listenerCount(signal) > 1) return;
    kill();
    uninstall();
    process.kill(process.pid, signal);
  };
  const uninstall = () => {
    process.removeListener('exit', kill);
    for (const signal of signals) process.removeListener(signal, onSignal);
  };
  process.once('exit', kill);
  for (const signal of signals) process.on(signal, onSignal);
  return uninstall;
}
