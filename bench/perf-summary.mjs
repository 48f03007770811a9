/**
 * Summarizes a `perf record -e cpu-clock -g` of a bundled Node process (bench/relay-calls.mjs
 * --perf, with --perf-basic-prof): CPU time, not wall time, by library as profile-summary.mjs
 * groups it (native code charged to its JavaScript caller), and the JavaScript functions that
 * spend it themselves. A bundle's frames are mapped back to their package or file through the
 * `// <path>` line esbuild writes before each module.
 *
 *   node bench/perf-summary.mjs <perf.data> <calls in the recording> [top]
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { libraryOf } from './lib/cpuprofile.mjs';

const [file, callsArg, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/perf-summary.mjs <perf.data> <calls> [top]\n');
  process.exit(2);
}
const calls = Number(callsArg) || 1;
const top = Number(topArg) || 25;

/** Per bundle: the sorted start lines of its modules and their paths. */
const bundles = new Map();
function moduleAt(path, line) {
  if (!bundles.has(path)) {
    const starts = [];
    readFileSync(path, 'utf8')
      .split('\n')
      .forEach((text, index) => {
        if (/^\/\/ \S+\.(m?js|cjs)$/.test(text)) starts.push([index + 1, text.slice(3)]);
      });
    bundles.set(path, starts);
  }
  const starts = bundles.get(path);
  let low = 0;
  for (let high = starts.length - 1; low < high;) {
    const mid = Math.ceil((low + high) / 2);
    if (starts[mid][0] <= line) low = mid;
    else high = mid - 1;
  }
  return `/${starts[low]?.[1].replace(/^(\.\.\/)+[^/]+\//, '') ?? path}`;
}

/** One perf frame as the cpuprofile helpers see a call frame. */
function frameOf(text) {
  const js = /JS:[*~^+]?'?(\S*) (\S+):(\d+):\d+\+/.exec(text);
  if (!js) return { functionName: /^\s*\S+ (\S+?)(\+0x|\s)/.exec(text)?.[1] ?? '?', url: '' };
  const [, functionName, location, line] = js;
  const url = location.startsWith('file://')
    ? moduleAt(fileURLToPath(location), Number(line))
    : location;
  return { functionName, url, lineNumber: Number(line) - 1 };
}

function* samples() {
  const text = execFileSync('perf', ['script', '-i', file], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  for (const block of text.split('\n\n')) {
    const [header, ...lines] = block.split('\n').filter(Boolean);
    if (header) yield { thread: header.trim().split(/\s+/)[0], stack: lines.map(frameOf) };
  }
}

const add = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
const byLibrary = new Map();
const byFunction = new Map();
const ownInclusive = new Map();
// A bundle's line numbers say nothing about the file: the function and its file only.
const nameOf = (frame) =>
  `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^\/(dist\/)?/, '')}`;
let total = 0;
for (const { thread, stack } of samples()) {
  total++;
  if (thread !== 'MainThread') {
    add(
      byLibrary,
      thread.startsWith('V8') ? 'V8 worker threads (GC, compiler)' : `thread ${thread}`,
    );
    continue;
  }
  const js = stack.find((frame) => frame.url);
  if (!js) {
    add(byLibrary, 'event loop and I/O outside JavaScript (libuv, TLS records)');
    continue;
  }
  add(byLibrary, libraryOf(stack));
  add(byFunction, nameOf(js));
  // Each of the service's functions once per sample, however deep it recurses.
  const own = new Set(stack.filter((frame) => frame.url.startsWith('/dist/')).map(nameOf));
  for (const name of own) add(ownInclusive, name);
}

function table(counts, limit) {
  const rows = [...counts].sort((a, b) => b[1] - a[1]).slice(0, limit);
  const perCall = (n) => ((n / total) * (total / 0.999 / calls) * 1000).toFixed(1);
  return [
    '| | share of CPU | us per call |',
    '| --- | ---: | ---: |',
    ...rows.map(([key, n]) => `| ${key} | ${((100 * n) / total).toFixed(1)}% | ${perCall(n)} |`),
  ].join('\n');
}

console.log(
  `${total} samples at 999 Hz (${((total / 0.999 / calls) * 1000).toFixed(0)} us of CPU per call)\n`,
);
console.log(
  `## By library (native code charged to its JavaScript caller)\n\n${table(byLibrary, top)}\n`,
);
console.log(`## JavaScript functions with what they call natively\n\n${table(byFunction, top)}\n`);
console.log(`## The service's own functions, inclusive\n\n${table(ownInclusive, top)}`);
