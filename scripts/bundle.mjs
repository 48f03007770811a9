// `npm run build`'s second step: bundles what `nest build` compiled into dist/ into a file per
// entry point in dist/bundle/ and the chunks they share. A start then reads about 20 files
// instead of about 2,500 (Node's ES module loader resolved and read each of them: 1.5 s of CPU
// per start on Node 20, 1 s on Node 24; bundled about 0.5 s).
//
// The input is tsc's output, not the sources: esbuild does not emit the decorator metadata
// (`design:paramtypes`) Nest's dependency injection reads. The bundles sit two folders deep,
// as the compiled files do, so the paths they find from import.meta.url hold in both:
// config/version.ts reads ../../package.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { build } from 'esbuild';
import { commonJsImports } from './commonjs-imports.mjs';
import { dropKeptNames } from './drop-kept-names.mjs';

const entryPoints = {
  main: 'dist/main.js',
  'relay-server': 'dist/relay-server/main.js',
  'webhook-worker': 'dist/webhook-worker/main.js',
};

// Left to node_modules at run time:
// - better-sqlite3 and pg-native are native addons (pg-native is optional and absent);
// - Nest's optional packages, which it requires only when installed: the plant store uses none;
// - pino-pretty runs in pino's transport thread, which loads it by name (terminals only).
const external = [
  'better-sqlite3',
  'pg-native',
  '@nestjs/microservices',
  '@nestjs/microservices/*',
  '@nestjs/websockets',
  '@nestjs/websockets/*',
  '@fastify/*',
  'pino-pretty',
];

// A bundle is an ES module: the CommonJS packages inside it still expect require, __filename
// and __dirname. pino starts its transport thread from files it finds by __dirname: its
// documented hook for bundlers names them (https://getpino.io/#/docs/bundling).
const banner = `import { createRequire as __createRequire } from 'node:module';
import { fileURLToPath as __fileURLToPath } from 'node:url';
import { dirname as __pathDirname } from 'node:path';
const require = __createRequire(import.meta.url);
const __filename = __fileURLToPath(import.meta.url);
const __dirname = __pathDirname(__filename);
globalThis.__bundlerPathsOverrides = {
  'thread-stream-worker': require.resolve('thread-stream/lib/worker.js'),
  'pino-worker': require.resolve('pino/lib/worker.js'),
  'pino/file': require.resolve('pino/file.js'),
};`;

// Swagger UI's plugins run in the browser: @nestjs/swagger writes them into the page with
// `fn.toString()`. In the bundle, keepNames would wrap them in esbuild's `__name` helper, which
// the page does not have (Swagger UI then shows nothing). Their module stays a file of its own,
// imported from dist/openapi/ as tsc wrote it (it imports nothing at run time).
const browserCode = {
  name: 'browser-code',
  setup(esbuild) {
    esbuild.onResolve({ filter: /\/swagger-ui-options\.js$/ }, () => ({
      path: '../openapi/swagger-ui-options.js',
      external: true,
    }));
  },
};

const { outputFiles } = await build({
  entryPoints,
  outdir: 'dist/bundle',
  bundle: true,
  // What only an `import()` reaches is a file of its own, read when that import runs: a process
  // without tracing, webhook receivers or MCP servers never reads (nor holds) their packages.
  // Code the entry points share is in chunk-*.js files beside them.
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  // Nest names providers and errors by their class names; logs and metrics show them. What it
  // costs at run time, drop-kept-names.mjs takes out again.
  keepNames: true,
  external,
  banner: { js: banner },
  plugins: [browserCode, commonJsImports],
  logLevel: 'warning',
  write: false,
});

// V8 keeps a script's source in memory for as long as its functions live, two bytes per
// character if a single one is past Latin-1: main.js's 8.7 MB took 17.4 MB of heap in every
// process. esbuild escapes strings and identifiers, not comments or regular expressions; a
// \uXXXX escape reads the same in both (a surrogate pair stays one character under /u), and
// replaces an identity escape (`\é`) whole.
for (const file of outputFiles) {
  const ascii = dropKeptNames(file.text).replace(
    /(\\*)([^\0-\x7f])/g,
    (_, slashes, char) =>
      `${slashes.length % 2 === 1 ? slashes.slice(1) : slashes}\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  mkdirSync(dirname(file.path), { recursive: true });
  writeFileSync(file.path, ascii);
}
