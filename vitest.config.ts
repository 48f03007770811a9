import { defineConfig } from 'vitest/config';

// Three layers, as STYLE.md asks: unit specs beside the code, end-to-end specs in test/
// against the built app on real ports, and the Helm chart's specs over `helm template`.
export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.spec.ts'], environment: 'node' },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e-spec.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 90_000,
          // Each e2e file starts its own server processes on free ports; two cores are
          // plenty for two files at once without starving the processes under test.
          maxWorkers: 2,
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
