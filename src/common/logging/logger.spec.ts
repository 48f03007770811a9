import { once } from 'node:events';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger, startUpLogger } from './logger.js';

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

describe('createLogger, JSON lines to a file', () => {
  let dir: string;
  let file: string;
  let logger: Logger;
  const destination = () =>
    (logger as unknown as Record<symbol, NodeJS.EventEmitter & { end(): void }>)[
      pino.symbols.streamSym
    ]!;

  // Only the batch's interval is faked: the writes themselves are real.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval'] });
    dir = mkdtempSync(path.join(tmpdir(), 'logger-'));
    file = path.join(dir, 'out.log');
    logger = createLogger({ logLevel: 'info', noColor: true }, openSync(file, 'w'));
  });
  // Ended, not only closed: the destination closes its descriptor and leaves pino's exit hook.
  afterEach(async () => {
    vi.useRealTimers();
    const closed = once(destination(), 'close');
    destination().end();
    await closed;
    rmSync(dir, { recursive: true });
  });

  const messages = () =>
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
  const firstWrite = () => once(destination(), 'write');

  it('writes the lines of 100 ms in one write', async () => {
    for (const n of ['1', '2 ✓', '3']) logger.info(`line ${n}`);
    const written = firstWrite();
    vi.advanceTimersByTime(100);
    const [bytes] = (await written) as [number];
    expect(messages()).toEqual(['line 1', 'line 2 ✓', 'line 3']);
    expect(bytes).toBe(readFileSync(file).length);
  });
});
