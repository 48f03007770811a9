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
    for (let frameId = id; frameId !== undefined; frameId = parent.get(frameId)) {
      const frame = nodes.get(frameId).callFrame;
      areas.add(areaOf(frame));
      if (frame.url.includes('/dist/')) functions.add(frameName(frame));
    }
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
  table('selfArea', 'Self time by package or part of the program', 25);
  table('inclusiveArea', 'Inclusive time by package (a package anywhere on the stack)', 25);
  table('self', `Self time by function, top ${top}`, top);
  table('inclusiveService', "The service's own functions, inclusive (with what they call)", 25);
  return lines.join('\n');
}
