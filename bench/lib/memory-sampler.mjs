/**
 * Preloaded into the service by `agent-memory.mjs --breakdown` (NODE_OPTIONS=--import): every
 * 5 ms it reads process.memoryUsage(), and every 100 ms it appends the sample with the highest
 * RSS of those 100 ms to AGENT_MEMORY_SAMPLES (one JSON line: t, rss, heapUsed, heapTotal,
 * external, arrayBuffers, in bytes). At exit it writes the modules the process loaded (Node 24's
 * module hooks; `unknown` on Node 20) to the same path plus `.modules`: whether the tracing SDK's
 * bundle was read shows there. A sample comes from the event loop: a peak within one blocking
 * call may pass between two samples, VmHWM does not.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { setInterval } from 'node:timers';

const out = process.env.AGENT_MEMORY_SAMPLES;
if (out) {
  const loaded = [];
  nodeModule.registerHooks?.({
    load(url, context, next) {
      loaded.push(url);
      return next(url, context);
    },
  });
  let top = undefined;
  let flushed = Date.now();
  setInterval(() => {
    const now = Date.now();
    const usage = process.memoryUsage();
    if (!top || usage.rss > top.rss) top = { t: now, ...usage };
    if (now - flushed < 100) return;
    appendFileSync(out, `${JSON.stringify(top)}\n`);
    top = undefined;
    flushed = now;
  }, 5).unref();
  const known = nodeModule.registerHooks !== undefined;
  process.on('exit', () => writeFileSync(`${out}.modules`, known ? loaded.join('\n') : 'unknown'));
}
