import { type FSWatcher, watch } from 'node:fs';

/**
 * Calls `onChange` (debounced) on a change in the config folder, not the file: Kubernetes swaps
 * a ConfigMap's `..data` symlink (editors save by rename), so a file watch goes stale.
 */
export interface ConfigWatcherOptions {
  dir: string;
  debounceMs: number;
  onChange: () => void;
  onError: (error: Error) => void;
}

export class ConfigWatcher {
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: ConfigWatcherOptions) {}

  start(): void {
    try {
      this.#watcher = watch(this.options.dir, { persistent: false }, () => this.#schedule());
      this.#watcher.on('error', (error) => this.options.onError(error));
    } catch (error) {
      // A missing folder must not stop the agent; it just will not hot-reload.
      this.options.onError(error as Error);
    }
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.options.onChange(), this.options.debounceMs);
  }
}
