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
    await endRun();
    expect(seen).toEqual([1, 2]);
    await endRun();
    await vi.advanceTimersByTimeAsync(1000);
    expect(seen).toEqual([1, 2]);
  });

  it('runs once for asks made before its run started', async () => {
    const { task, seen, endRun } = gatedTask({ value: 1 });
    task.request();
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    await endRun();
    await vi.advanceTimersByTimeAsync(1000);
    expect(seen).toEqual([1]);
  });

  it('starts runs at least the gap apart, counted from the start of the last', async () => {
    const state = { value: 1 };
    const { task, seen, endRun } = gatedTask(state, 250);
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual([1]);
    state.value = 2;
    task.request();
    await vi.advanceTimersByTimeAsync(200);
    await endRun();
    await vi.advanceTimersByTimeAsync(49);
    expect(seen).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1);
    expect(seen).toEqual([1, 2]);
    await endRun();
    // Idle for longer than the gap: the next ask runs at once again.
    await vi.advanceTimersByTimeAsync(500);
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual([1, 2, 2]);
  });

  it('hands a failure over, thrown or rejected, and goes on running', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const task = new CoalescedTask(
      () => {
        runs++;
        if (runs === 1) throw new Error('thrown');
        return Promise.reject(new Error('rejected'));
      },
      (error) => {
        errors.push(error);
        throw new Error('the handler fails too');
      },
    );
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(2);
    expect(errors.map(String)).toEqual(['Error: thrown', 'Error: rejected']);
  });

  it('starts no run once stopped, and waits for the one under way', async () => {
    const { task, seen, endRun } = gatedTask({ value: 1 });
    task.request();
    await vi.advanceTimersByTimeAsync(0);
    task.request();
    let stopped = false;
    const stopping = task.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    await endRun();
    await stopping;
    task.request();
    await vi.advanceTimersByTimeAsync(1000);
    expect(seen).toEqual([1]);
  });
});
