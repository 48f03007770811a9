import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';

/** The build's plugin for `import()` of CommonJS packages (a script in JavaScript). */
const SCRIPT = '../scripts/commonjs-imports.mjs';
const { commonJsImports } = (await import(SCRIPT)) as { commonJsImports: Plugin };

const dir = mkdtempSync(path.join(tmpdir(), 'commonjs-imports-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A CommonJS package, an ES module package, and an entry that imports both at run time. */
const FILES = {
  'node_modules/old-style/package.json': '{"name": "old-style", "main": "index.js"}',
  'node_modules/old-style/index.js': `
    Object.defineProperty(exports, '__esModule', { value: true });
    exports.greet = () => 'hello';
    exports.count = 3;`,
  'node_modules/new-style/package.json': '{"name": "new-style", "type": "module"}',
  'node_modules/new-style/index.js': `export const greet = () => 'hi'; export default 7;`,
  'entry.mjs': `
    const old = await import('old-style');
    const neu = await import('new-style');
    export const seen = [old.greet?.(), old.count, old.default?.count, neu.greet(), neu.default];`,
};

/** Bundles the entry with splitting, as the build does, and runs it. */
async function run(plugins: Plugin[], out: string): Promise<unknown> {
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  await build({
    entryPoints: [path.join(dir, 'entry.mjs')],
    absWorkingDir: dir,
    outdir: path.join(dir, out),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    plugins,
    logLevel: 'silent',
  });
  const entry = (await import(pathToFileURL(path.join(dir, out, 'entry.js')).href)) as {
    seen: unknown;
  };
  return entry.seen;
}

describe('import() of a CommonJS package in a split bundle', () => {
  it('gives the named exports and the exports object as default, as Node does', async () => {
    expect(await run([commonJsImports], 'with')).toEqual(['hello', 3, 3, 'hi', 7]);
  });

  it('gives only `default` without the plugin (what it is there for)', async () => {
    expect(await run([], 'without')).toEqual([undefined, undefined, 3, 'hi', 7]);
  });
});
