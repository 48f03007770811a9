import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestAgentServer } from '../test/fixtures/agent-server/test-agent-server.js';
import { waitFor } from '../test/fixtures/mcp-e2e-support.js';
import {
  dropped,
  type FloodedAgent,
  floodDeafChild,
  floodStalledServer,
  startFloodedAgent,
} from '../test/support/agent-floods.js';
import type { RunningApp } from '../test/support/app-process.js';
import { call } from '../test/support/http.js';

/**
 * One round of `agent-memory.mjs`: the two floods of test/agent-relay-budgets.e2e-spec.ts
 * (test/support/agent-floods.ts) on the build AGENT_MEMORY_MAIN, in the same order and with the
 * same settings, measured instead of bounded. Peaks are VmHWM, reset between phases (clear_refs), so each phase has its own;
 * the test's bound applies to the largest of them. Appends one JSON line to AGENT_MEMORY_OUT.
 */
const MIB = 1024 * 1024;
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run bench/agent-memory.mjs`);
  return value;
};
const SAMPLES = process.env.AGENT_MEMORY_SAMPLER ? `${env('AGENT_MEMORY_OUT')}.samples` : '';
const result: Record<string, unknown> = { label: env('AGENT_MEMORY_LABEL') };
const phases: Record<string, { from: number; to: number }> = {};
let agent: FloodedAgent;
let server: TestAgentServer;
let app: RunningApp;

function statusMiB(key: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${app.child.pid!}/status`, 'utf8');
  return Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(status)![1]) / 1024;
}

/** The phase's peak, then a new one starts: 5 in clear_refs resets VmHWM to the current RSS. */
function endPhase(name: string, from: number): void {
  phases[name] = { from, to: Date.now() };
  result[name] = statusMiB('VmHWM');
  writeFileSync(`/proc/${app.child.pid!}/clear_refs`, '5');
}

/** What the test checks between and after the floods: a plant stored, an echo from a bystander. */
async function stillServes(): Promise<void> {
  const id = Date.now();
  const body = JSON.stringify({ id, name: `survivor ${id}` });
  const stored = await call(`${app.apiUrl}/plants`, { method: 'POST', token: app.token, body });
  const echo = { name: 'echo', arguments: { text: 'still here' } };
  const echoed = await server.call('bystander', 'tools/call', echo);
  expect([stored.status, echoed.result]).toMatchObject([
    200,
    { content: [{ text: 'still here' }] },
  ]);
}

beforeAll(async () => {
  const sampler = process.env.AGENT_MEMORY_SAMPLER;
  agent = await startFloodedAgent(
    {
      NODE_OPTIONS: `--max-old-space-size=256 --max-semi-space-size=16${sampler ? ` --import ${sampler}` : ''}`,
      AGENT_MEMORY_SAMPLES: SAMPLES || undefined,
    },
    env('AGENT_MEMORY_MAIN'),
  );
  ({ server, app } = agent);
  await sleep(3_000);
  result.idle = statusMiB('VmRSS');
  endPhase('start', 0);
});

afterAll(async () => {
  await app?.stop();
  await server?.stop();
  if (SAMPLES && existsSync(SAMPLES)) result.breakdown = breakdown();
  appendFileSync(env('AGENT_MEMORY_OUT'), `${JSON.stringify(result)}\n`);
});

/** Per phase, the sample with the highest RSS (MiB), and whether the tracing SDK was read. */
function breakdown(): Record<string, unknown> {
  const samples = readFileSync(SAMPLES, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>);
  const modules = existsSync(`${SAMPLES}.modules`)
    ? readFileSync(`${SAMPLES}.modules`, 'utf8')
    : '';
  const tracingLoaded = modules === 'unknown' ? modules : modules.includes('/bundle/otel.js');
  const out: Record<string, unknown> = { tracingLoaded };
  for (const [name, { from, to }] of Object.entries(phases)) {
    const inPhase = samples.filter((s) => s.t! >= from && s.t! <= to);
    const top = inPhase.reduce((a, b) => (b.rss! > a.rss! ? b : a), inPhase[0] ?? {});
    out[name] = Object.fromEntries(
      Object.entries(top)
        .filter(([key]) => key !== 't')
        .map(([key, value]) => [key, Math.round(value / MIB)]),
    );
  }
  return out;
}

it('floods a deaf child with 4 MB notifications', async () => {
  const from = Date.now();
  const { padding } = await floodDeafChild(agent, stillServes);
  const refused = await server.call('deaf', 'tools/call', {
    name: 'echo',
    arguments: { text: padding },
  });
  expect(refused.error).toMatchObject({ code: -32005 });
  endPhase('stdin', from);
}, 180_000);

it('floods a server that stopped reading with 3 MB log notifications', async () => {
  const from = Date.now();
  const { answer } = await floodStalledServer(agent);
  const id = Date.now();
  const body = JSON.stringify({ id, name: `survivor ${id}` });
  await call(`${app.apiUrl}/plants`, { method: 'POST', token: app.token, body });
  endPhase('send', from);
  // The answer follows the notifications on stdout, maybe after the line on stderr.
  await waitFor(
    async () => (await dropped(app, 'agent_server_send_dropped_total', 'chatty', 'answer')) === 1,
    'the answer replaced by an error',
  );
  server.resumeReading();
  expect((await answer).error).toMatchObject({ code: -32005 });
}, 180_000);
