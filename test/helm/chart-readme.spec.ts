/**
 * The chart's README carries the values table helm-docs generates from values.yaml's `# --`
 * comments. Two checks keep it true: every key of values.yaml is in the table (no tool needed,
 * so it runs everywhere), and, where helm-docs is installed, the README is exactly what
 * helm-docs makes from README.md.gotmpl today.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { chartDir, helmDocsBin, helmDocsMissing, run, skipWhenMissing } from './helm-tools.js';

const readme = readFileSync(path.join(chartDir, 'README.md'), 'utf8');

/** Every key path of values.yaml; maps and lists are one key (helm-docs lists them whole). */
export function keyPaths(value: unknown, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [prefix];
  const entries = Object.entries(value);
  if (entries.length === 0) return [prefix];
  return entries.flatMap(([key, child]) => keyPaths(child, prefix ? `${prefix}.${key}` : key));
}

/** The keys of the README's values table: the first cell of each row. */
const tableKeys = new Set(
  [...readme.matchAll(/^\| ([A-Za-z0-9_.]+) \| /gm)].map((match) => match[1]!),
);

/** A key is documented by its own row or by the row of an object that holds it. */
const documented = (key: string) =>
  key.split('.').some((_, i, parts) => tableKeys.has(parts.slice(0, i + 1).join('.')));

describe('the chart README', () => {
  it('has a row for every key of values.yaml', () => {
    const values: unknown = parse(readFileSync(path.join(chartDir, 'values.yaml'), 'utf8'));
    const missing = keyPaths(values).filter((key) => !documented(key));
    expect(missing).toEqual([]);
  });

  it('closes every code block before the next heading', () => {
    const headingsInBlocks = readme
      .split(/^```/m)
      .filter((_, i) => i % 2 === 1)
      .flatMap((block) => block.match(/^#{1,6} .*/gm) ?? []);
    expect(headingsInBlocks).toEqual([]);
  });

  it.skipIf(skipWhenMissing(helmDocsMissing))(
    'is what helm-docs generates from README.md.gotmpl (run it after changing values.yaml)',
    () => {
      const args = ['--chart-search-root', path.dirname(chartDir), '--skip-version-footer'];
      const result = run(helmDocsBin!, [...args, '--dry-run']);
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout.trimEnd()).toBe(readme.trimEnd());
    },
  );
});

describe('keyPaths', () => {
  it('walks objects, and takes maps, lists and scalars whole', () => {
    expect(keyPaths({ a: { b: 1, c: [] }, d: {}, e: '' })).toEqual(['a.b', 'a.c', 'd', 'e']);
  });
});
