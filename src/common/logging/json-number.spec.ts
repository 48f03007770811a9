import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { JsonNumber } from './json-number.js';

describe('JsonNumber', () => {
  it('is written by pino as the plain JSON number it holds', () => {
    const lines: string[] = [];
    // As the request log has it: a child of a logger with redaction, without redaction itself.
    const parent = pino(
      { base: null, redact: { paths: ['*.token'], censor: '[redacted]' } },
      { write: (line: string) => lines.push(line) },
    );
    const logger = parent.child({}, { redact: [] });
    logger.info({ durationMs: new JsonNumber(1.234), whole: new JsonNumber(7) }, 'request');
    expect(lines[0]).toContain('"durationMs":1.234,"whole":7,');
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ durationMs: 1.234, whole: 7 });
  });
});
