// With code splitting, esbuild gives an `import()` of a CommonJS package only its `default`
// (evanw/esbuild#3245): Nest's `import('class-validator')` would find no `validate`. Node gives
// the named exports too; this plugin does the same through a facade module that names them.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const require = createRequire(import.meta.url);
const identifier = /^[A-Za-z_$][\w$]*$/;

/** Node's rule: .cjs, or .js under a package.json whose type is not "module". */
function isCommonJs(file) {
  if (file.endsWith('.cjs')) return true;
  if (!file.endsWith('.js')) return false;
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).type !== 'module';
    } catch {
      // No package.json here: look one folder up.
    }
  }
  return true;
}

export const commonJsImports = {
  name: 'commonjs-imports',
  setup(esbuild) {
    esbuild.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.kind !== 'dynamic-import') return undefined;
      const { path, external } = await esbuild.resolve(args.path, {
        kind: 'import-statement',
        resolveDir: args.resolveDir,
      });
      if (external || !isCommonJs(path)) return undefined;
      // Named relative to the checkout: the bundle's comments name no build machine's folders.
      return { path: relative('.', path), namespace: 'commonjs-facade', pluginData: path };
    });
    // The names are the exports object's keys, as loading the package here finds them.
    esbuild.onLoad({ filter: /.*/, namespace: 'commonjs-facade' }, ({ pluginData: path }) => {
      const names = Object.keys(require(path)).filter((n) => identifier.test(n) && n !== 'default');
      // `default` is the exports object itself, as Node has it (not its `default` property).
      const contents = `const m = require(${JSON.stringify(path)});
export default m;
export const { ${names.join(', ')} } = m;`;
      return { contents, resolveDir: dirname(path), loader: 'js' };
    });
  },
};
