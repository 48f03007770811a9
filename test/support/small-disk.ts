import { execFileSync } from 'node:child_process';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './app-process.js';

/**
 * A real, small filesystem (tmpfs) to fill up: mounting needs root, so on other machines this
 * returns undefined and the full-disk tests are skipped (CI runs as root).
 */
export class SmallDisk {
  private constructor(readonly dir: string) {}

  static mount(sizeMiB: number, options = ''): SmallDisk | undefined {
    if (process.getuid?.() !== 0) return undefined;
    const dir = tempDir('small-disk');
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m${options}`, 'tmpfs', dir], {
        stdio: 'ignore',
      });
      return new SmallDisk(dir);
    } catch {
      return undefined;
    }
  }

  /** Writes a filler file until the filesystem answers ENOSPC. */
  fill(): void {
    const fd = openSync(this.filler, 'w');
    const chunk = Buffer.alloc(64 * 1024, 1);
    try {
      for (;;) writeSync(fd, chunk);
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOSPC') throw error;
      // Whatever is smaller than a chunk, byte pages at a time.
      try {
        for (;;) writeSync(fd, chunk, 0, 4096);
      } catch {
        // full
      }
    } finally {
      closeSync(fd);
    }
  }

  free(): void {
    rmSync(this.filler, { force: true });
  }

  unmount(): void {
    execFileSync('umount', ['-l', this.dir], { stdio: 'ignore' });
  }

  private get filler(): string {
    return join(this.dir, 'filler');
  }
}
