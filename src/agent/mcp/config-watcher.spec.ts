import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { watchConfigDir } from './config-watcher.js';

/**
 * The file system's events are real; the debounce timer is fake, so "one change per burst" is
 * checked without guessing how long the events take to arrive: wait until the debounce is
 * armed (the events came), prove nothing was reported yet, then let the debounce run out.
 */
const realSetTimeout = globalThis.setTimeout;
beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }));

const stops: (() => void)[] = [];
afterEach(() => {
  stops.splice(0).forEach((stop) => stop());
  vi.useRealTimers();
});

/** Polls on the real clock until the watcher has armed its debounce timer (5 s bound). */
async function untilDebounceArmed(): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (vi.getTimerCount() === 0) {
    if (Date.now() > deadline) throw new Error('no file system event reached the watcher in 5 s');
    await new Promise((resolve) => realSetTimeout(resolve, 10));
  }
}

function watchDir(dir: string) {
  const calls: number[] = [];
  const errors: Error[] = [];
  const stop = watchConfigDir(
    dir,
    100,
    () => calls.push(Date.now()),
    (error) => errors.push(error),
  );
  stops.push(stop);
  return { calls, errors };
}

describe('watchConfigDir', () => {
  it('reports one change for a burst of writes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'watch-'));
    const { calls } = watchDir(dir);
    for (let i = 0; i < 5; i++) writeFileSync(join(dir, 'mcp-servers.json'), `{"n":${i}}`);
    await untilDebounceArmed();
    expect(calls).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(100);
    expect(calls).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('sees a Kubernetes-style ..data symlink swap', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'watch-'));
    mkdirSync(join(dir, '..v1'));
    writeFileSync(join(dir, '..v1', 'mcp-servers.json'), '{}');
    symlinkSync('..v1', join(dir, '..data'));
    symlinkSync('..data/mcp-servers.json', join(dir, 'mcp-servers.json'));
    const { calls } = watchDir(dir);

    mkdirSync(join(dir, '..v2'));
    writeFileSync(join(dir, '..v2', 'mcp-servers.json'), '{"changed":true}');
    symlinkSync('..v2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await untilDebounceArmed();
    expect(calls).toHaveLength(0);
    vi.advanceTimersByTime(100);
    expect(calls).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('reports a missing folder as an error instead of throwing', () => {
    const { errors } = watchDir(join(tmpdir(), 'does-not-exist-' + Date.now()));
    expect(errors).toHaveLength(1);
  });
});
