import { execFileSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { conformanceMissing } from './conformance-suite.js';
import {
  helmDocsMissing,
  helmMissing,
  kubeconformMissing,
  promtoolMissing,
  skipWhenMissing,
} from '../helm/helm-tools.js';

/**
 * vitest globalSetup: says once per run which groups of tests this machine skips, and why; the
 * reporter only counts skipped tests. It runs once per project in the runner's own process, so
 * a note shared by two projects (PostgreSQL: unit and e2e) is remembered on globalThis.
 * Where skipping would hide a broken step, the groups fail instead: REQUIRE_POSTGRES=1 for
 * PostgreSQL (test/support/postgres.ts), REQUIRE_REDIS=1 for redis-server (test/support/redis.ts),
 * CI for the chart's tools (test/helm/helm-tools.ts).
 */
const said: Set<string> = ((
  globalThis as { plantStoreSkipNotes?: Set<string> }
).plantStoreSkipNotes ??= new Set());

function sayOnce(note: string): void {
  if (said.has(note)) return;
  said.add(note);
  console.warn(`\n  skipped: ${note}\n`);
}

export default function sayWhatIsSkipped(project: TestProject): void {
  const name = project.name;
  if (
    (name === 'unit' || name === 'e2e') &&
    (process.env.TEST_DATABASE_URL ?? '') === '' &&
    process.env.REQUIRE_POSTGRES !== '1'
  ) {
    sayOnce(
      'the PostgreSQL variants (unit and e2e): TEST_DATABASE_URL is not set; ' +
        'eval "$(bash .ci/start-postgres.sh)" starts a throwaway server',
    );
  }
  if (name === 'e2e' && process.env.REQUIRE_REDIS !== '1' && !hasRedisServer()) {
    sayOnce(
      'the multi-replica relay specs: redis-server is not installed; ' +
        'bash .ci/install-redis.sh installs it',
    );
  }
  const conformance = name === 'e2e' ? conformanceMissing() : undefined;
  if (conformance) sayOnce(`the MCP conformance suite through the relay: ${conformance}`);
  if (name === 'helm' && skipWhenMissing(helmDocsMissing)) {
    sayOnce(`the chart README's regenerated values table: ${helmDocsMissing}`);
  }
  if (name === 'helm' && skipWhenMissing(promtoolMissing)) {
    sayOnce(`the Prometheus rules' promtool checks and unit tests: ${promtoolMissing}`);
  }
  if (name === 'helm' && skipWhenMissing(kubeconformMissing)) {
    sayOnce(
      helmMissing
        ? `every chart spec: ${helmMissing}`
        : `the kubeconform schema checks of the chart: ${kubeconformMissing}`,
    );
  }
}

function hasRedisServer(): boolean {
  try {
    execFileSync(process.env.REDIS_SERVER ?? 'redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
