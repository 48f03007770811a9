/**
 * The code's size budgets: the relay gains features, and the plumbing gives the lines back.
 * Lines of the non-spec TypeScript files, comments and blank lines included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');

function linesUnder(folder: string): number {
  return readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .filter((entry) => !entry.name.endsWith('.spec.ts'))
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name), 'utf8'))
    .reduce((sum, text) => sum + text.split('\n').length - 1, 0);
}

describe('size budgets', () => {
  it('src/ is at most 17,000 lines', () => {
    expect(linesUnder('src')).toBeLessThanOrEqual(17_000);
  });

  it('src/relay-server/ is at most 6,564 lines', () => {
    expect(linesUnder('src/relay-server')).toBeLessThanOrEqual(6_564);
  });
});
