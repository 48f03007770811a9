/**
 * The chart's PostgreSQL connection budget: the pool size reaches the pods as DATABASE_POOL_MAX,
 * the bundled server's max_connections fits the most pods the values allow, and an external
 * server's stated limit refuses values that could exceed it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  appContainer,
  type Deployment,
  envOf,
  helmMissing,
  type Manifest,
  oneOfKind,
  render,
  renderError,
  skipWhenMissing,
} from './helm-tools.js';

const maxConnectionsOf = (docs: Manifest[]): number => {
  const server = oneOfKind<
    Manifest & { spec: { template: { spec: { containers: { args: string[] }[] } } } }
  >(docs, 'StatefulSet');
  const args = server.spec.template.spec.containers[0]!.args;
  return Number(args.find((a) => a.startsWith('max_connections='))?.split('=')[1]);
};

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart connection budget${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
    });

    it('passes database.poolSize to the app as DATABASE_POOL_MAX', () => {
      const docs = render({ set: { 'database.poolSize': 7 } });
      const app = appContainer(oneOfKind<Deployment>(docs, 'Deployment'));
      expect(envOf(app, 'DATABASE_POOL_MAX')?.value).toBe('7');
    });

    it("sizes the bundled server's max_connections for the HPA's most pods", () => {
      // Defaults: (10 + 1 surge) pods x (5 + 1 LISTEN) = 66, under PostgreSQL's default 100.
      expect(maxConnectionsOf(render())).toBe(100);
      // (20 + 1) x (8 + 1) = 189, plus 10 reserved.
      const big = render({ set: { 'autoscaling.maxReplicas': 20, 'database.poolSize': 8 } });
      expect(maxConnectionsOf(big)).toBe(199);
    });

    it("refuses pods that could open more than an external server's max_connections", () => {
      const external = {
        'postgresql.enabled': false,
        'database.url': 'postgres://u:p@db:5432/plants',
      };
      expect(
        render({ set: { ...external, 'database.maxConnections': 66 } }).length,
      ).toBeGreaterThan(0);
      expect(renderError({ set: { ...external, 'database.maxConnections': 65 } })).toContain(
        'the pods may open 66 PostgreSQL connections',
      );
    });
  },
);
