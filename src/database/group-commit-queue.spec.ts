import { describe, expect, it } from 'vitest';
import { GroupCommitQueue } from './group-commit-queue.js';

function recordingQueue(options: { maxBatch?: number; concurrency?: number; fail?: boolean } = {}) {
  const batches: string[][] = [];
  const queue = new GroupCommitQueue<string, string>({
    flush: async (items) => {
      batches.push(items);
      await new Promise((r) => setTimeout(r, 5));
      if (options.fail) throw new Error('store down');
      return items.map((item) => `ok:${item}`);
    },
    key: (item) => item.split('#')[0]!,
    maxBatch: options.maxBatch ?? 100,
    concurrency: options.concurrency ?? 1,
  });
  return { queue, batches };
}

describe('GroupCommitQueue', () => {
  it('flushes items pushed in the same turn together and answers each its own result', async () => {
    const { queue, batches } = recordingQueue();
    const results = await Promise.all(['a', 'b', 'c'].map((item) => queue.push(item)));
    expect(results).toEqual(['ok:a', 'ok:b', 'ok:c']);
    expect(batches).toEqual([['a', 'b', 'c']]);
  });

  it('groups what arrives while a flush is in flight into the next one', async () => {
    const { queue, batches } = recordingQueue();
    const first = queue.push('a');
    await new Promise((r) => setImmediate(r));
    const later = ['b', 'c'].map((item) => queue.push(item));
    await Promise.all([first, ...later]);
    expect(batches).toEqual([['a'], ['b', 'c']]);
  });

  it('never puts two items with the same key in one flush', async () => {
    const { queue, batches } = recordingQueue();
    await Promise.all(['x#1', 'y', 'x#2', 'x#3'].map((item) => queue.push(item)));
    expect(batches).toEqual([['x#1', 'y'], ['x#2'], ['x#3']]);
  });

  it('caps batch size', async () => {
    const { queue, batches } = recordingQueue({ maxBatch: 2 });
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map((item) => queue.push(item)));
    expect(batches.map((b) => b.length)).toEqual([2, 2, 1]);
  });

  it('rejects every item of a failed flush and keeps working', async () => {
    const { queue } = recordingQueue({ fail: true });
    const results = await Promise.allSettled(['a', 'b'].map((item) => queue.push(item)));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('runs up to `concurrency` flushes at once', async () => {
    let inFlight = 0;
    let peak = 0;
    const queue = new GroupCommitQueue<number, number>({
      flush: async (items) => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((r) => setTimeout(r, 10));
        inFlight--;
        return items;
      },
      key: String,
      maxBatch: 1,
      concurrency: 3,
    });
    await Promise.all([1, 2, 3, 4, 5, 6].map((n) => queue.push(n)));
    expect(peak).toBe(3);
  });

  it('answers a flush only after `confirm` passed, and rejects all of it when it throws', async () => {
    const flushed: string[][] = [];
    let intact = true;
    const queue = new GroupCommitQueue<string, string>({
      flush: (items) => {
        flushed.push(items);
        return Promise.resolve(items);
      },
      key: String,
      maxBatch: 10,
      concurrency: 1,
      confirm: () => {
        if (!intact) throw new Error('file gone');
      },
    });
    expect(await Promise.all(['a', 'b'].map((item) => queue.push(item)))).toEqual(['a', 'b']);
    intact = false;
    const results = await Promise.allSettled(['c', 'd'].map((item) => queue.push(item)));
    // Committed, yet not acknowledged.
    expect(flushed).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
