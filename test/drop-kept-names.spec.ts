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
  'c.mjs': `export default class {}`,
  'b.mjs': `
    import { Query as Other, ask, tell } from './a.mjs';
    import Anonymous from './c.mjs';
    class Query { static self = Query; }
    let Decorated = class Decorated {};
    const holder = { run: () => 3, 'a-b': class {} };
    export const seen = [Query, Other, Decorated, Other.make().constructor, ask, tell, tell(),
      holder.run, Query.self, Anonymous, holder['a-b']];`,
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
      'default',
      'a-b',
    ]);
    expect(kept.match(/__name\(/g)?.length).toBeGreaterThan(dropped.match(/__name\(/g)!.length);
    // Only the two names no class can carry in the source stay set at run time.
    expect(dropped.match(/__name\(this/g)).toHaveLength(2);
  });

  it('leaves alone what renaming would change: nested names, shorthands, __proto__', async () => {
    const code = `
      var __name = (target, value) => Object.defineProperty(target, 'name', { value, configurable: true });
      var Foo2 = class Foo3 {
        static { __name(this, 'Foo'); }
        static inner() { return class { static { __name(this, 'Foo'); } static outer() { return Foo3; } }; }
      };
      var Bar2 = class Bar3 {
        static { __name(this, 'Bar'); }
        static read(source) { const { Bar3 } = source; return Bar3; }
      };
      const proto = { __proto__: __name(function () {}, '__proto__') };
      export const checks = [Foo2.inner().outer() === Foo2, Foo2.name, Foo2.inner().name,
        Bar2.read({ Bar3: 1 }), Bar2.name, Object.getPrototypeOf(proto).name];`;
    const file = path.join(dir, 'hand.mjs');
    writeFileSync(file, dropKeptNames(code));
    const { checks } = (await import(file)) as { checks: unknown[] };
    expect(checks).toEqual([true, 'Foo', 'Foo', 1, 'Bar', '__proto__']);
  });

  it('is needed: without keepNames, esbuild renames the colliding classes', async () => {
    expect(await namesIn(await bundleOf(false))).not.toEqual(await namesIn(await bundleOf(true)));
  });
});
