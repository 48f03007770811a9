import { constants } from 'node:os';

/**
 * The last line of defence against orphaned MCP servers: their process groups are detached, so
 * nothing kills them when the agent dies without its shutdown hooks. `kill` runs
 * synchronously (SIGKILL to every group) when the process exits ('exit': process.exit, an
 * uncaught exception) and on every signal whose default action ends the process and that Node
 * lets us catch, as long as nothing else handles that signal.
 *
 * A signal that the application handles itself (main.ts turns SIGTERM and SIGINT into a
 * graceful shutdown) is left to it: our listener sees another listener and does nothing. Any
 * other one (SIGHUP, SIGQUIT, SIGUSR2, ...) would otherwise kill Node at once and leave the
 * groups running; here the groups are killed first and the signal is raised again with its
 * default action, so the process still ends the way the sender meant (same signal, exit status
 * 128 + n). Not touched: SIGUSR1 (Node's inspector), SIGPIPE (ignored by Node), SIGPROF and
 * SIGVTALRM (V8's sampling profiler sends them to itself: catching them would end a profiled
 * process), SIGABRT and SIGTRAP (raised by abort() and debuggers, no JS runs then); SIGKILL and
 * SIGSTOP cannot be caught, and SIGSEGV, SIGBUS, SIGFPE, SIGILL cannot be handled safely.
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
  const onExit = () => kill();
  const onSignal = (signal: NodeJS.Signals) => {
    // Handled by the application (a graceful shutdown, a reload): not ours to end the process.
    if (process.listenerCount(signal) > 1) return;
    kill();
    uninstall();
    process.kill(process.pid, signal);
  };
  const uninstall = () => {
    process.removeListener('exit', onExit);
    for (const signal of signals) process.removeListener(signal, onSignal);
  };
  process.once('exit', onExit);
  for (const signal of signals) process.on(signal, onSignal);
  return uninstall;
}
