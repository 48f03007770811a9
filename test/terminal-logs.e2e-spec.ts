import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { MAIN, newToken, tempDir } from './support/app-process.js';

/**
 * On a terminal the log is for people: pino-pretty lines instead of JSON. `script` (util-linux,
 * in every Debian) runs the app under a pseudo-terminal, as a developer's shell would.
 */
describe('logs on a terminal', () => {
  // `NO_COLOR=` (empty, as an env file may set it) is unset for no-color.org: still pretty.
  // Two processes with nothing shared: side by side, each with its own context's expect.
  it.concurrent.for([
    ['unset', undefined],
    ['empty', ''],
  ] as const)(
    'are readable lines, not JSON, and still carry no token (NO_COLOR %s)',
    async ([_, noColor], { expect }) => {
      const configDir = tempDir('config');
      writeFileSync(join(configDir, 'mcp-servers.json'), '{"mcpServers":{}}');
      const token = newToken();
      const env = {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        TERM: 'dumb',
        HOST: '127.0.0.1',
        // Any free ports: this test reads only the log.
        PORT: '0',
        SERVICE_HEALTH_CHECK_PORT: '0',
        SERVICE_METRICS_PORT: '0',
        SERVICE_CONFIG_DIR: configDir,
        DATA_DIR: tempDir('data'),
        API_TOKENS: token,
        ...(noColor === undefined ? {} : { NO_COLOR: noColor }),
      };
      const command = `exec ${process.execPath} ${MAIN}`;
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise((resolve) => child.on('exit', resolve));
      try {
        await expect.poll(() => output, { timeout: 20_000 }).toContain('Plant Store listening');
        const line = output.split('\n').find((l) => l.includes('Plant Store listening'))!;
        expect(line).toMatch(/INFO/);
        expect(line).not.toContain('"level"');
        expect(output).not.toContain(token);
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    },
  );
});
