import { type Client, ProtocolError } from '@modelcontextprotocol/client';

/** A tool call that failed in a loop: which client, when against the kill, and why. */
export interface LoopFailure {
  worker: number;
  /** The call was sent before `killedAt` was set. */
  startedBeforeKill: boolean;
  /** Milliseconds from the kill to the failure (the time since 0 before the kill). */
  afterKill: number;
  code: number | undefined;
  why: string;
}

/**
 * Each client calls the echo server's `wait` (100 ms) over and over for `seconds`, counting its
 * answers (those after `killedAt`, once the test sets it, apart) and its failures; a failure
 * for which `stops` is true ends that client's loop.
 */
export function callInLoops(
  workers: Client[],
  seconds: number,
  stops: (failure: LoopFailure, failures: LoopFailure[]) => boolean,
) {
  const calls = {
    killedAt: 0,
    failures: [] as LoopFailure[],
    ok: workers.map(() => 0),
    okAfterKill: workers.map(() => 0),
    done: Promise.resolve() as Promise<unknown>,
  };
  const loop = async (client: Client, worker: number) => {
    const until = Date.now() + seconds * 1000;
    while (Date.now() < until) {
      const startedBeforeKill = calls.killedAt === 0;
      try {
        await client.callTool({ name: 'wait', arguments: { ms: 100 } });
        calls.ok[worker] = (calls.ok[worker] ?? 0) + 1;
        if (calls.killedAt > 0) calls.okAfterKill[worker] = (calls.okAfterKill[worker] ?? 0) + 1;
      } catch (error) {
        const code = error instanceof ProtocolError ? error.code : undefined;
        const afterKill = Date.now() - calls.killedAt;
        const failure = { worker, startedBeforeKill, afterKill, code, why: String(error) };
        calls.failures.push({ ...failure, why: failure.why.slice(0, 160) });
        if (stops(failure, calls.failures)) return;
      }
    }
  };
  calls.done = Promise.all(workers.map((client, worker) => loop(client, worker)));
  return calls;
}
