import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CoalescedTask } from './coalesced-task.js';

/** A task whose runs the test ends one by one; `seen` holds the state each run read. */
function gatedTask(state: { value: number }, minGapMs = 0) {
  const seen: number[] = [];
  const ends: (() => void)[] = [];
  const task = new CoalescedTask(
    () => {
      seen.push(state.value);
      return new Promise<void>((resolve) => ends.push(resolve));
    },
    () => undefined,
    minGapMs,
  );
  const endRun = async () => {
    ends.shift()?.();
    await vi.advanceTimersByTimeAsync(0);
  };
  return { task, seen, endRun };
}

beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
afterEach(() => vi.useRealTimers());

describe('CoalescedTask', () => {
  it('runs once more after a run that began before the last change, however many asks', async () => {
    const state = { value: 1 };
    const { task, seen, endRun } = gatedTask(state);
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    state.value = 2;
    task.request();
    task.request();
    task.request();
    await endRun();
    expect(seen).toEqual([1, 2]);
    await endRun();
    await vi.advanceTimersByTimeAsync(1000);
    expect(seen).toEqual([1, 2]);
  });

  it('starts runs at least the gap apart, the first at once', async () => {
    const state = { value: 1 };
    const { task, seen, endRun } = gatedTask(state, 250);
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual([1]);
    state.value = 2;
    task.request();
    await endRun();
    await vi.advanceTimersByTimeAsync(249);
    expect(seen).toEqual([1]);
    task.request();
    await vi.advanceTimersByTimeAsync(1);
    expect(seen).toEqual([1, 2]);
    await endRun();
    // Idle for longer than the gap: the next ask runs at once again.
    await vi.advanceTimersByTimeAsync(500);
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual([1, 2, 2]);
  });

  it('runs again after a failed run, and hands the error over', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const task = new CoalescedTask(
      () => Promise.reject(new Error(`run ${++runs}`)),
      (error) => errors.push(error),
    );
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(2);
    expect(errors.map(String)).toEqual(['Error: run 1', 'Error: run 2']);
  });
});
