import { defineConfig } from 'vitest/config';

// Three layers: unit specs beside the code, end-to-end specs in test/ against the built app
// on real ports, and the Helm chart's specs over `helm template` (README.md, "Development").
export default defineConfig({
  test: {
    // Each e2e file starts its own server processes on free ports; two files at once keep two
    // cores busy without starving the processes under test.
    maxWorkers: 2,
    // Says once per run which groups are skipped on this machine and why (no PostgreSQL, no helm).
    globalSetup: ['test/support/skip-notes.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.spec.ts', 'test/*.spec.ts'],
          environment: 'node',
          // Some specs run child processes and sockets: on a loaded CI machine 5 s was not enough.
          testTimeout: 20_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e-spec.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 90_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'helm',
          include: ['test/helm/**/*.spec.ts'],
          environment: 'node',
          testTimeout: 60_000,
        },
      },
    ],
  },
});
