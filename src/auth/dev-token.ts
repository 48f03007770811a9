import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DEV_TOKEN_FILE = 'dev-token';

/** Outside production without API_TOKENS: one token, kept (mode 600) in the data directory. */
export function loadOrCreateDevToken(dataDir: string): { token: string; file: string } {
  const file = join(dataDir, DEV_TOKEN_FILE);
  try {
    return readOrCreate(dataDir, file);
  } catch (error) {
    // A bare ENOTDIR or EACCES does not say which setting to change.
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `cannot keep the development token in ${file}: DATA_DIR (${dataDir}) must be a directory this process can write (${reason})`,
      { cause: error },
    );
  }
}

function readOrCreate(dataDir: string, file: string): { token: string; file: string } {
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
