/**
 * A number pino writes with JSON.stringify (its way for objects) rather than `'' + n`: V8
 * keeps the text of a fractional number so converted in its number-to-string cache, allocated
 * in the old generation, where each request's new value stayed until a full GC (~24 B a line).
 */
export class JsonNumber {
  constructor(private readonly value: number) {}

  toJSON(): number {
    return this.value;
  }
}
