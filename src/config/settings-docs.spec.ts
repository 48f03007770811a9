import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/configuration.md's settings tables and `.env.example` are generated from the settings'
 * declarations (scripts/settings-docs.mjs), as the chart's values table is by helm-docs: this
 * fails when a declaration changed and `npm run docs:settings` was not run, or a setting has no
 * description.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the generated settings docs', () => {
  it('are what npm run docs:settings makes from the declarations today', () => {
    const result = spawnSync(process.execPath, ['scripts/settings-docs.mjs', '--check'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    // About 1.5 s of CPU (esbuild, prettier); more on a busy machine.
  }, 30_000);
});
