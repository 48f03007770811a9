// `npm start` runs this first: it builds dist/ when it is missing or older than a source file,
// so the quick start (`npm ci && npm start`) works on a fresh clone without a separate build.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

// The last file `npm run build` writes (nest build, then the bundles).
const built = 'dist/bundle/main.js';

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs;
    newest = Math.max(newest, mtime);
  }
  return newest;
}

const stale =
  !existsSync(built) ||
  Math.max(
    newestMtime('src'),
    statSync('package.json').mtimeMs,
    statSync('scripts/bundle.mjs').mtimeMs,
  ) > statSync(built).mtimeMs;

if (stale) {
  if (!existsSync('node_modules/.bin/nest')) {
    console.error(
      'dist/ is missing or stale and the build tools are not installed: run `npm ci` first.',
    );
    process.exit(1);
  }
  // nest build (tsc with the swagger plugin) prints nothing until it is done: say how long.
  console.log(
    'Building dist/ with `npm run build` (it is missing or older than src/): about 40 s on 2 cores, silent until done...',
  );
  execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
}
