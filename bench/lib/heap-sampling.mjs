/**
 * V8's sampling heap profiler over the inspector protocol, counting objects already collected:
 * where a process's garbage comes from (a CPU profile shows only what collecting it costs).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';

/** One inspector session: call(method, params) -> result. */
export async function inspector(logFile) {
  let url;
  for (let i = 0; i < 100 && !url; i++) {
    url = /ws:\/\/\S+/.exec(readFileSync(logFile, 'utf8'))?.[0];
    if (!url) await sleep(50);
  }
  if (!url) throw new Error(`no inspector URL in ${logFile}`);
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const pending = new Map();
  let lastId = 0;
  socket.on('message', (data) => {
    const message = JSON.parse(String(data));
    pending.get(message.id)?.(message);
    pending.delete(message.id);
  });
  return {
    call: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = ++lastId;
        pending.set(id, (m) => (m.error ? reject(new Error(m.error.message)) : resolve(m.result)));
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

/** Self bytes per key over the profile's tree. */
function aggregate(head, keyOf) {
  const totals = new Map();
  const walk = (node) => {
    const key = keyOf(node.callFrame);
    totals.set(key, (totals.get(key) ?? 0) + node.selfSize);
    node.children.forEach(walk);
  };
  walk(head);
  return totals;
}

/** A package, a node: module or a file of the service; with `file`, the file in the package. */
function where(url, file = false) {
  if (!url) return '(V8 and native)';
  if (url.startsWith('node:')) return url;
  const inModules = url.split('node_modules/').at(-1);
  if (inModules !== url) {
    const parts = inModules.split('/');
    if (file) return inModules;
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  return url.includes('/dist/') ? `service ${url.split('/dist/')[1].replace(/\.js$/, '')}` : url;
}

function table(totals, requests, top) {
  return [
    '| | bytes per request | share |',
    '| --- | ---: | ---: |',
    ...[...totals]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([key, bytes]) => {
        const all = [...totals.values()].reduce((a, b) => a + b, 0);
        return `| ${key} | ${Math.round(bytes / requests)} | ${((100 * bytes) / all).toFixed(1)}% |`;
      }),
  ].join('\n');
}

/** Samples every 1 KiB allocated, collected objects included, while `run()` runs. */
export async function sampleAllocations(session, run) {
  await session.call('HeapProfiler.enable');
  await session.call('HeapProfiler.startSampling', {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await run();
  return (await session.call('HeapProfiler.stopSampling')).profile;
}

/** Bytes allocated per call (or per `unit`) over a profile, by package and by function. */
export function allocationTables(profile, calls, unit = 'call') {
  const byPackage = aggregate(profile.head, (frame) => where(frame.url));
  const byFunction = aggregate(
    profile.head,
    (frame) =>
      `${frame.functionName || '(anonymous)'} ${where(frame.url, true)}:${frame.lineNumber + 1}`,
  );
  const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
  return [
    `**${(total / calls / 1024).toFixed(1)} KiB allocated per ${unit}**`,
    table(byPackage, calls, 15),
    table(byFunction, calls, 30),
  ].join('\n\n');
}
