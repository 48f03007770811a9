import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';

/** The build's pass over each bundle (a script in JavaScript, so typed here). */
const SCRIPT = '../scripts/drop-kept-names.mjs';
const { dropKeptNames } = (await import(SCRIPT)) as { dropKeptNames: (code: string) => string };

const dir = mkdtempSync(path.join(tmpdir(), 'kept-names-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Two modules whose class names collide in one bundle, so esbuild renames them. */
const FILES = {
  'a.mjs': `
    export class Query extends Error { static make() { return new Query(); } }
    export const ask = () => 1;
    export function tell() { const inner = () => 2; return inner; }`,
  'b.mjs': `
    import { Query as Other, ask, tell } from './a.mjs';
    class Query { static self = Query; }
    let Decorated = class Decorated {};
    const holder = { run: () => 3 };
    export const seen = [Query, Other, Decorated, Other.make().constructor, ask, tell, tell(),
      holder.run, Query.self];`,
};

async function bundleOf(keepNames: boolean): Promise<string> {
  for (const [file, text] of Object.entries(FILES)) writeFileSync(path.join(dir, file), text);
  const { outputFiles } = await build({
    entryPoints: [path.join(dir, 'b.mjs')],
    bundle: true,
    format: 'esm',
    keepNames,
    write: false,
  });
  return outputFiles[0]!.text;
}

async function namesIn(code: string): Promise<string[]> {
  const file = path.join(dir, `out-${Math.random()}.mjs`);
  writeFileSync(file, code);
  const { seen } = (await import(file)) as { seen: Array<{ name: string }> };
  return seen.map((value) => value.name);
}

describe('dropKeptNames', () => {
  it('keeps every name keepNames keeps, without setting one at run time', async () => {
    const kept = await bundleOf(true);
    const dropped = dropKeptNames(kept);
    expect(await namesIn(dropped)).toEqual(await namesIn(kept));
    expect(await namesIn(dropped)).toEqual([
      'Query',
      'Query',
      'Decorated',
      'Query',
      'ask',
      'tell',
      'inner',
      'run',
      'Query',
    ]);
    expect(kept).toMatch(/__name\(this/);
    expect(dropped).not.toMatch(/__name\(/);
  });

  it('is needed: without keepNames, esbuild renames the colliding classes', async () => {
    expect(await namesIn(await bundleOf(false))).not.toEqual(await namesIn(await bundleOf(true)));
  });
});
