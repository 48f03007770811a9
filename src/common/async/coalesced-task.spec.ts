import { describe, expect, it } from 'vitest';
import { CoalescedTask } from './coalesced-task.js';

/** A task whose runs the test ends one by one; `seen` is the state each run read. */
function gatedTask(state: { value: number }) {
  const seen: number[] = [];
  const ends: (() => void)[] = [];
  const started: (() => void)[] = [];
  const task = new CoalescedTask(
    () => {
      seen.push(state.value);
      started.shift()?.();
      return new Promise<void>((resolve) => ends.push(resolve));
    },
    () => undefined,
  );
  const nextStart = () => new Promise<void>((resolve) => started.push(resolve));
  return { task, seen, ends, nextStart };
}

describe('CoalescedTask', () => {
  it('runs once more after a run that began before the last change', async () => {
    const state = { value: 1 };
    const { task, seen, ends, nextStart } = gatedTask(state);
    const first = nextStart();
    task.request();
    await first;
    state.value = 2;
    const second = nextStart();
    task.request();
    task.request();
    task.request();
    ends.shift()?.();
    await second;
    expect(seen).toEqual([1, 2]);
    ends.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([1, 2]);
  });

  it('runs again after a failed run, and hands the error over', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const done = new Promise<void>((resolve) => {
      const task = new CoalescedTask(
        () => {
          runs++;
          if (runs === 2) resolve();
          return Promise.reject(new Error(`run ${runs}`));
        },
        (error) => errors.push(error),
      );
      task.request();
      task.request();
    });
    await done;
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toBe(2);
    expect(errors.map(String)).toEqual(['Error: run 1', 'Error: run 2']);
  });
});
