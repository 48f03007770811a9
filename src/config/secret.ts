import { inspect } from 'node:util';

/**
 * A configuration value that must never reach a log line, an error message, a metric or a
 * child process by accident. Printing, inspecting or JSON-serialising it shows a placeholder;
 * the value is only available through `reveal()`, which makes every real use greppable.
 */
export class Secret<T = string> {
  readonly #value: T;

  constructor(value: T) {
    this.#value = value;
  }

  reveal(): T {
    return this.#value;
  }

  toString(): string {
    return '[redacted]';
  }

  toJSON(): string {
    return '[redacted]';
  }

  [inspect.custom](): string {
    return 'Secret([redacted])';
  }
}
