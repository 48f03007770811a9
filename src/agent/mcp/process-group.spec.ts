import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { groupRunning, parseProcStat, signalGroup } from './process-group.js';

describe('parseProcStat', () => {
  it('reads state and pgid after a command name with spaces and parentheses', () => {
    expect(parseProcStat('4242 (my (odd) cmd) S 1 4343 4242 0 -1 4194560 0 0')).toEqual({
      state: 'S',
      pgid: 4343,
    });
  });

  it('rejects garbage', () => {
    expect(parseProcStat('nonsense')).toBeUndefined();
  });
});

describe('process groups', () => {
  it('signals every member and sees when none runs any more', async () => {
    const child = spawn('sh', ['-c', 'sleep 30 & sleep 30; wait'], {
      detached: true,
      stdio: 'ignore',
    });
    await new Promise((resolve) => child.once('spawn', resolve));
    const pgid = child.pid!;
    expect(groupRunning(pgid)).toBe(true);
    expect(signalGroup(pgid, 'SIGKILL')).toBe(true);
    const deadline = Date.now() + 2_000;
    while (groupRunning(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(groupRunning(pgid)).toBe(false);
  });

  it('reports a group that does not exist', () => {
    expect(signalGroup(2 ** 22 + 12_345, 0)).toBe(false);
  });
});
