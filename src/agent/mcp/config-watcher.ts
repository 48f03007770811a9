import { type FSWatcher, watch } from 'node:fs';

/**
 * Calls `onChange` (debounced) on a change in the config folder, not the file: Kubernetes swaps
 * a ConfigMap's `..data` symlink (editors save by rename), so a file watch goes stale. A missing
 * folder is reported to `onError`, never thrown: the agent runs on, it just will not hot-reload.
 * Returns the function that stops watching.
 */
export function watchConfigDir(
  dir: string,
  debounceMs: number,
  onChange: () => void,
  onError: (error: Error) => void,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { persistent: false }, () => {
      clearTimeout(timer);
      timer = setTimeout(onChange, debounceMs);
    });
    watcher.on('error', onError);
  } catch (error) {
    onError(error as Error);
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
