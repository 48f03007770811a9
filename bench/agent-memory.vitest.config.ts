import { defineConfig } from 'vitest/config';

// bench/agent-memory.mjs runs its scenario with this config, one round per run: the suite's
// own config (vitest.config.ts) never picks it up, CI does not run it.
export default defineConfig({
  test: {
    include: ['bench/agent-memory.scenario.ts'],
    environment: 'node',
    hookTimeout: 90_000,
  },
});
