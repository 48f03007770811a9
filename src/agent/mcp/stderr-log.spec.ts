import type { Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { StderrLog } from './stderr-log.js';

function setup(options: { burst?: number; ratePerSecond?: number; keepLines?: number } = {}) {
  let now = 0;
  const events: string[] = [];
  const log = new StderrLog(
    {
      info: (_fields: object, text: string) => events.push(text),
      warn: (fields: { dropped: number }) => events.push(`[${fields.dropped} dropped]`),
    } as unknown as Pick<Logger, 'info' | 'warn'>,
    { burst: 3, ratePerSecond: 1, keepLines: 4, maxLineLength: 10, now: () => now, ...options },
  );
  return { log, events, advance: (ms: number) => (now += ms) };
}

describe('StderrLog', () => {
  it('splits chunks into lines and keeps a partial line until it is complete', () => {
    const { log, events } = setup();
    log.write('one\ntw');
    expect(events).toEqual(['one']);
    log.write('o\r\n\n');
    expect(events).toEqual(['one', 'two']);
  });

  it('drops lines over the rate and notes how many once tokens are back', () => {
    const { log, events, advance } = setup();
    log.write('a\nb\nc\nd\ne\n');
    expect(events).toEqual(['a', 'b', 'c']);
    advance(1_000);
    log.write('f\n');
    expect(events).toEqual(['a', 'b', 'c', '[2 dropped]', 'f']);
  });

  it('reports pending drops when the child ends', () => {
    const { log, events } = setup({ burst: 1 });
    log.write('a\nb\nc');
    log.end();
    expect(events).toEqual(['a', '[2 dropped]']);
  });

  it('remembers the last lines, dropped ones included', () => {
    const { log } = setup({ burst: 1 });
    log.write('1\n2\n3\n4\n5\n6\n');
    expect(log.recent()).toEqual(['3', '4', '5', '6']);
  });

  it('cuts long lines, also without a newline', () => {
    const { log, events } = setup();
    log.write('x'.repeat(25));
    expect(events).toEqual(['x'.repeat(10)]);
  });
});
