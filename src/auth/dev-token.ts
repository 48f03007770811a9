import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DEV_TOKEN_FILE = 'dev-token';

/**
 * Outside production with no API_TOKENS, the service makes one token and keeps it in the data
 * directory (mode 600), so it survives restarts and the quick start's curl lines keep working.
 */
export function loadOrCreateDevToken(dataDir: string): { token: string; file: string } {
  const file = join(dataDir, DEV_TOKEN_FILE);
  try {
    const token = readFileSync(file, 'utf8').trim();
    if (token.length >= 32) {
      chmodSync(file, 0o600);
      return { token, file };
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  const token = `dev_${randomBytes(32).toString('base64url')}`;
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, file };
}
