import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startUpLogger } from './logger.js';

/** The lines `startUpLogger(level, ports)` writes for one info call. */
function written(level: string, ports: number[]): string[] {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString().trim());
      done();
    },
  });
  startUpLogger(pino({ level }, sink), ports).info({ ports: { api: 1 } }, 'listening');
  return lines;
}

describe('startUpLogger', () => {
  it.each([
    ['info', [3000, 8080, 9090], 1],
    ['warn', [3000, 8080, 9090], 0],
    ['warn', [0, 8080, 9090], 1],
    ['error', [0, 0, 0], 1],
    ['fatal', [3000, 0, 9090], 1],
    ['silent', [0, 0, 0], 0],
  ])('at %s with ports %j writes %i line(s)', (level, ports, count) => {
    const lines = written(level, ports);
    expect(lines).toHaveLength(count);
    if (count === 1) expect(JSON.parse(lines[0]!)).toMatchObject({ level: 30, msg: 'listening' });
  });
});
