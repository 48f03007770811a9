import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigWatcher } from './config-watcher.js';

const watchers: ConfigWatcher[] = [];
afterEach(() => watchers.splice(0).forEach((watcher) => watcher.stop()));

function watchDir(dir: string) {
  const calls: number[] = [];
  const errors: Error[] = [];
  const watcher = new ConfigWatcher({
    dir,
    debounceMs: 100,
    onChange: () => calls.push(Date.now()),
    onError: (error) => errors.push(error),
  });
  watchers.push(watcher);
  watcher.start();
  return { calls, errors };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('ConfigWatcher', () => {
  it('reports one change for a burst of writes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'watch-'));
    const { calls } = watchDir(dir);
    for (let i = 0; i < 5; i++) writeFileSync(join(dir, 'mcp-servers.json'), `{"n":${i}}`);
    await sleep(400);
    expect(calls).toHaveLength(1);
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
    await sleep(400);
    expect(calls).toHaveLength(1);
  });

  it('reports a missing folder as an error instead of throwing', () => {
    const { errors } = watchDir(join(tmpdir(), 'does-not-exist-' + Date.now()));
    expect(errors).toHaveLength(1);
  });
});
