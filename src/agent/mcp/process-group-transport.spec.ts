import { tmpdir } from 'node:os';
import { setImmediate as tick } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { ProcessGroupTransport } from './process-group-transport.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let transport: ProcessGroupTransport | undefined;

/** Sends 1 MB and keeps nothing of it but a weak reference (the caller's frame holds none). */
function sendPadding(to: ProcessGroupTransport): WeakRef<object> {
  const params = { padding: 'x'.repeat(1_000_000) };
  const message: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/padding', params };
  void to.send(message).catch(() => undefined);
  return new WeakRef(params);
}
afterEach(async () => {
  await transport?.close();
  transport = undefined;
});

describe('ProcessGroupTransport', () => {
  it('keeps a message the child has not read as its text only, not as the message too', async () => {
    // A child that never reads its stdin: the pipe takes 64 KiB, the rest waits in the agent.
    transport = new ProcessGroupTransport({
      command: process.execPath,
      args: ['-e', 'setTimeout(() => {}, 60_000)'],
      env: { PATH: process.env.PATH ?? '' },
      cwd: tmpdir(),
      killGraceMs: 100,
    });
    await transport.start();
    const sent = sendPadding(transport);
    expect(transport.stdinWaitingBytes).toBeGreaterThan(900_000);
    // A WeakRef's target is held to the end of the job that made it.
    await tick();
    gc();
    expect(transport.stdinWaitingBytes).toBeGreaterThan(900_000);
    expect(sent.deref()).toBeUndefined();
  });
});
