/**
 * A number pino writes with JSON.stringify, its way for objects. Its way for numbers, `'' + n`,
 * makes V8 allocate the text in the old generation (the number-to-string cache): ~24 B a line
 * for a new fractional value, kept until a full GC.
 */
export class JsonNumber {
  constructor(private readonly value: number) {}

  toJSON(): number {
    return this.value;
  }
}
