import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startShopPath, stopShopPath, untilShopServersUp } from './fixtures/relay-e2e-support.js';
import { type BearerProxy, startBearerProxy } from './support/bearer-proxy.js';
import {
  CONFORMANCE_DIR as HERE,
  conformanceMissing,
  conformanceNode,
} from './support/conformance-suite.js';
import { newToken, type RunningApp } from './support/app-process.js';
import type { RunningRelay } from './support/relay-process.js';

/**
 * The official MCP conformance suite (both lines, every scenario: `--suite all`) against its own
 * reference server, run over stdio by the built service as agent `shop`, through the built relay's
 * per-server endpoint. What still fails through the relay is listed, scenario by scenario, in
 * test/conformance/expected-failures-*.yaml; the suite fails the run on any other failure and
 * on a listed scenario that now passes, so the lists only shrink. (Directly over HTTP, the
 * reference server passes all of 0.1.16 and fails 0.2's tasks and custom-header scenarios.)
 *
 * The suite's CLI needs Node >= 22: CI installs it (`npm ci --prefix test/conformance`) and runs
 * this file on Node 24. On Node 20 it runs when CONFORMANCE_NODE names a newer node; else, or
 * without that install, it is skipped.
 */
const node = conformanceNode();
const SUITES = ['0.1', '0.2'] as const;

let relay: RunningRelay;
let app: RunningApp;
let proxy: BearerProxy;

describe.skipIf(conformanceMissing() !== undefined)(
  'the MCP conformance suite through the relay (e2e)',
  () => {
    beforeAll(async () => {
      const clientToken = newToken();
      const server = { command: node!, args: [join(HERE, 'stdio-server.ts')] };
      const path = await startShopPath({ conformance: server }, newToken(), clientToken);
      ({ relay, app } = path);
      await untilShopServersUp(relay, ['conformance']);
      const target = new URL(`https://localhost:${relay.port}`);
      proxy = await startBearerProxy(target, clientToken, readFileSync(path.ca.caFile, 'utf8'));
    }, 120_000);

    afterAll(async () => {
      await proxy?.close();
      await stopShopPath({ app, relay });
    });

    for (const suite of SUITES) {
      it(`passes suite ${suite} but for its listed failures`, async () => {
        const { code, output, dir } = await runSuite(suite);
        expect(code, tail(output)).toBe(0);
        // Warnings fail no run: the stream checks that only warn are held here. Suite 0.1 posts
        // its call as 2025-03-26, which gets no priming event (nor from the reference server).
        const primed = {
          'server-sse-priming-event': 'SUCCESS',
          'server-sse-retry-field': 'SUCCESS',
        };
        expect(statuses(dir, 'server-server-sse-polling')).toMatchObject(
          suite === '0.1' ? { 'server-sse-content-type': 'INFO' } : primed,
        );
      }, 600_000);
    }
  },
);

async function runSuite(
  suite: string,
): Promise<{ code: number | null; output: string; dir: string }> {
  const cli = join(HERE, `node_modules/conformance-${suite}/dist/index.js`);
  const dir = mkdtempSync(join(tmpdir(), `conformance-${suite}-`));
  const args = [cli, 'server', '--url', `${proxy.url}/mcp/shop/conformance`, '--suite', 'all'];
  args.push('-o', dir);
  args.push('--expected-failures', join(HERE, `expected-failures-${suite}.yaml`));
  const child = spawn(node!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, output, dir };
}

/** The status of each check of one scenario, from the results the suite wrote to `dir`. */
function statuses(dir: string, scenario: string): Record<string, string> {
  const run = readdirSync(dir).find((name) => name.startsWith(`${scenario}-`));
  if (!run) return {};
  const checks = JSON.parse(readFileSync(join(dir, run, 'checks.json'), 'utf8')) as {
    id: string;
    status: string;
  }[];
  return Object.fromEntries(checks.map((check) => [check.id, check.status]));
}

/** The suite's summary and baseline verdict: what a failing run needs to be read. */
function tail(output: string): string {
  const start = output.lastIndexOf('=== SUMMARY ===');
  return start === -1 ? output.slice(-4000) : output.slice(start);
}
