/**
 * A .cpuprofile (node --cpu-prof) summarized: where the busy time goes, by package (self and
 * inclusive), by function (self), and by the service's own functions (inclusive, with callees).
 */
import { readFileSync } from 'node:fs';

const SPECIAL = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);

/** The package or part of the program a frame belongs to. */
export function areaOf({ url, functionName }) {
  if (SPECIAL.has(functionName)) return functionName;
  if (!url) return '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return `service ${url.slice(dist + '/dist/'.length).replace(/\.js$/, '')}`;
  if (url.startsWith('node:')) {
    const name = url.slice(5).replace(/^internal\//, '');
    return `node:${name.split('/')[0].replace(/\.js$/, '')}`;
  }
  return url;
}

/**
 * Who a sample's time is charged to, library by library (the attribution table): the
 * package of the innermost JavaScript frame; native functions and Node's own helpers (crypto,
 * buffers, timers, hrtime) are charged to the JavaScript that called them, except the socket
 * writes (the kernel's loopback send, which on this VM also runs the receiver) and the SQLite
 * statement calls made by Kysely's driver (the store's own work).
 */
const LIBRARY = [
  [
    /^(router|express|parseurl|path-to-regexp|finalhandler|on-finished|encodeurl|escape-html|statuses|type-is|content-type|mime-types|media-typer|depd|http-errors|vary|cors|object-assign|etag|fresh|debug|ms|send|serve-static|accepts|negotiator|proxy-addr|forwarded|ipaddr\\.js|qs|range-parser|content-disposition|cookie|cookie-signature|merge-descriptors|utils-merge|mime-db|safe-buffer|setprototypeof|toidentifier|inherits|ee-first)$/,
    'Express (router and request/response helpers)',
  ],
  [
    /^(@nestjs\/core|@nestjs\/common|@nestjs\/platform-express|rxjs|reflect-metadata|tslib)$/,
    'Nest pipeline (@nestjs/core, rxjs, reflect-metadata)',
  ],
  [
    /^(passport|passport-http-bearer|passport-strategy|@nestjs\/passport)$/,
    'passport-http-bearer strategy',
  ],
  [
    /^(class-validator|class-transformer|validator|libphonenumber-js)$/,
    'class-validator + class-transformer',
  ],
  [
    /^(pino|sonic-boom|@pinojs\/redact|fast-redact|pino-std-serializers|quick-format-unescaped|atomic-sleep|thread-stream)$/,
    'pino (request log)',
  ],
  [/^(prom-client|@willsoto\/nestjs-prometheus|tdigest|bintrees)$/, 'prom-client (metrics)'],
  [/^@nestjs\/throttler$/, 'rate limiter storage (@nestjs/throttler)'],
  [/^kysely$/, 'Kysely (query building, driver)'],
  [
    /^(better-sqlite3|pg|pg-protocol|pg-pool|pg-types|postgres-array|bindings)$/,
    'the store (better-sqlite3 / pg)',
  ],
  [
    /^(lossless-json|body-parser|raw-body|iconv-lite|bytes|unpipe)$/,
    'JSON in and out (lossless-json, body-parser, raw-body)',
  ],
  [/^service common\/(logging|metrics)\//, "the service's log and metrics middleware"],
  [/^service common\/rate-limit\//, "the service's rate-limit middleware"],
  [/^service (auth|config\/api-tokens)/, "the service's bearer guard and token check"],
  [/^service common\/validation\//, "the service's validation pipe"],
  [
    /^service (common\/http|common\/json)\//,
    "the service's HTTP layer (adapter, port scope, body reader, int64 JSON)",
  ],
  [
    /^service (plants|database|webhooks)\//,
    "the service's plants controller, service and repository",
  ],
  [/^service /, "the service's other code"],
  [
    /^node:(_http_|http$|net$|stream|internal\/streams|events$|stream_base_commons)/,
    "Node's HTTP server, streams and events",
  ],
  [
    /^(\(native\)|node:)/,
    'microtask queue (the promises of async code everywhere) and other Node internals',
  ],
];
const SOCKET_WRITES = new Set([
  'writev',
  'writeUtf8String',
  'writeBuffer',
  'writeString',
  'writeLatin1String',
]);
const CALLER_PAYS =
  /^node:(internal\/)?(crypto|buffer|util|timers|url|querystring|validators|errors|fs|perf_hooks|process\/per_thread)/;

export function libraryOf(stack) {
  const leaf = stack[0];
  if (SPECIAL.has(leaf.functionName))
    return leaf.functionName === '(garbage collector)' ? 'garbage collection' : 'V8 (program)';
  // The same native names write files (sonic-boom's log lines): a socket's come from stream_base.
  const caller = stack[1]?.url ?? '';
  if (!leaf.url && SOCKET_WRITES.has(leaf.functionName) && /stream_base|node:net/.test(caller)) {
    return 'socket writes (kernel loopback send)';
  }
  for (const frame of stack) {
    const area = areaOf(frame);
    if (area === '(native)' || CALLER_PAYS.test(frame.url)) continue;
    // better-sqlite3's statements run inside the JavaScript frame that calls them (V8 shows
    // no frame for an addon's function): Kysely's executeQuery, the baselines' raw-server.
    if (frame.url.endsWith('sqlite-driver.js') && frame.functionName === 'executeQuery') {
      return 'the store (better-sqlite3 / pg)';
    }
    if (frame.url.endsWith('/baselines/raw-server.mjs')) return 'the store (better-sqlite3 / pg)';
    if (frame.url.endsWith('/baselines/nest-floor.mjs')) return "nest-floor's own code";
    for (const [pattern, name] of LIBRARY) if (pattern.test(area)) return name;
    return area;
  }
  return 'microtask queue (the promises of async code everywhere) and other Node internals';
}

function frameName(frame) {
  const file = frame.url
    ? frame.url.replace(/^.*\/(node_modules|dist)\//, '').replace(/^file:\/\//, '')
    : '';
  return `${frame.functionName || '(anonymous)'}${file ? ` ${file}:${frame.lineNumber + 1}` : ''}`;
}

/** `window`: [from, to] in microseconds of process.hrtime (the clock of the profile's startTime). */
export function analyzeProfile(profile, window) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const self = new Map();
  const selfArea = new Map();
  const inclusiveArea = new Map();
  const inclusiveService = new Map();
  const library = new Map();
  let total = 0;
  let idle = 0;
  const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at < window[0] || at > window[1])) return;
    const us = profile.timeDeltas[i + 1] ?? 0; // a sample's delta is the time until the next
    const node = nodes.get(id);
    if (!node) return;
    total += us;
    if (node.callFrame.functionName === '(idle)') {
      idle += us;
      return;
    }
    add(self, frameName(node.callFrame), us);
    add(selfArea, areaOf(node.callFrame), us);
    const areas = new Set();
    const functions = new Set();
    const stack = [];
    for (let frameId = id; frameId !== undefined; frameId = parent.get(frameId)) {
      const frame = nodes.get(frameId).callFrame;
      stack.push(frame);
      areas.add(areaOf(frame));
      if (frame.url.includes('/dist/')) functions.add(frameName(frame));
    }
    add(library, libraryOf(stack), us);
    for (const area of areas) add(inclusiveArea, area, us);
    for (const fn of functions) add(inclusiveService, fn, us);
  });
  inclusiveArea.delete('(root)');
  const sorted = (map) => [...map.entries()].sort((a, b) => b[1] - a[1]);
  return {
    totalUs: total,
    busyUs: total - idle,
    self: sorted(self),
    selfArea: sorted(selfArea),
    inclusiveArea: sorted(inclusiveArea),
    inclusiveService: sorted(inclusiveService),
    library: sorted(library),
  };
}

export function summarizeProfile(file, { title, requests, note, window, top = 30, sections }) {
  const a = analyzeProfile(JSON.parse(readFileSync(file, 'utf8')), window);
  const pct = (us) => `${((100 * us) / a.busyUs).toFixed(1)}%`;
  const perRequest = (us) => (requests ? `${(us / requests).toFixed(1)}` : '-');
  const lines = [`# ${title}`, ''];
  if (note) lines.push(note, '');
  lines.push(
    `${window ? 'Under load only: ' : ''}${(a.totalUs / 1e6).toFixed(2)} s, busy (not idle) ${(a.busyUs / 1e6).toFixed(2)} s` +
      (requests ? `: ${perRequest(a.busyUs)} us of CPU per request on the main thread.` : '.'),
    '',
  );
  const table = (key, heading, n) => {
    if (sections && !sections.includes(key)) return;
    const rows = a[key];
    lines.push(
      `## ${heading}`,
      '',
      '| | share of busy time | us per request |',
      '| --- | ---: | ---: |',
    );
    for (const [name, us] of rows.slice(0, n)) {
      lines.push(`| ${name.replace(/\|/g, '\\|')} | ${pct(us)} | ${perRequest(us)} |`);
    }
    lines.push('');
  };
  table(
    'library',
    'By library (native calls and Node helpers charged to their JavaScript caller)',
    25,
  );
  table('selfArea', 'Self time by package or part of the program', 25);
  table('inclusiveArea', 'Inclusive time by package (a package anywhere on the stack)', 25);
  table('self', `Self time by function, top ${top}`, top);
  table('inclusiveService', "The service's own functions, inclusive (with what they call)", 25);
  return lines.join('\n');
}
