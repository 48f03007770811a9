import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import {
  isSuccessor,
  parseWalHeader,
  readWalHeaderBytes,
  WAL_HEADER_BYTES,
  type WalHeader,
} from './wal-header.js';

type FileState = NonNullable<ReturnType<typeof stateOf>>;

function stateOf(path: string) {
  const stats = statSync(path, { throwIfNoEntry: false });
  return stats && { dev: stats.dev, ino: stats.ino, size: stats.size };
}

/**
 * Whether the SQLite file and its WAL open here are still the files at their paths, whole:
 * SQLite keeps committing to a file unlinked or renamed over, and a restart would start from
 * what is at the path. Device and inode, taken at open under the exclusive lock, are compared
 * by stat before each write and acknowledged commit. Sizes never shrink while we hold the files
 * (no VACUUM or journal_size_limit); a WAL overwritten in place is told by its 32-byte header.
 */
export class SqliteFileIdentity {
  private readonly wal: string;
  private readonly main: FileState;
  private readonly walState: FileState | undefined;
  private walHeader: WalHeader | undefined;
  private walFd: number | undefined;
  private readonly headerBytes = Buffer.alloc(WAL_HEADER_BYTES);

  constructor(readonly file: string) {
    this.wal = `${file}-wal`;
    const main = stateOf(file);
    if (!main) throw new Error(`${file} vanished while it was being opened`);
    this.main = main;
    // In WAL mode with an exclusive lock the WAL exists from the first transaction until close.
    this.walState = stateOf(this.wal);
  }

  /** Undefined while the files are in place, else what happened to them. */
  problem(): string | undefined {
    const main = changeOf(this.file, this.main, 'the database file');
    if (main !== undefined || !this.walState) return main;
    return changeOf(this.wal, this.walState, 'the WAL file') ?? this.walHeaderProblem();
  }

  /** Closes the WAL kept open for its header; the next check opens it again. */
  close(): void {
    if (this.walFd !== undefined) closeSync(this.walFd);
    this.walFd = undefined;
  }

  // The WAL's first bytes, through a descriptor kept open (an open per commit cost more than
  // the check's stats and read), and kept only when it is the inode just compared at the path.
  private readWalHeader(): Buffer {
    if (this.walFd === undefined) {
      const fd = openSync(this.wal, 'r');
      const opened = fstatSync(fd);
      if (opened.dev !== this.walState?.dev || opened.ino !== this.walState.ino) {
        closeSync(fd);
        return readWalHeaderBytes(this.wal);
      }
      this.walFd = fd;
    }
    return this.headerBytes.subarray(
      0,
      readSync(this.walFd, this.headerBytes, 0, WAL_HEADER_BYTES, 0),
    );
  }

  /** The WAL's header as SQLite left it: verifying, and following the last one seen. */
  private walHeaderProblem(): string | undefined {
    if (!this.walState || this.walState.size < WAL_HEADER_BYTES) return undefined;
    const bytes = this.readWalHeader();
    // The header last verified, unchanged: nothing to parse or checksum again.
    if (this.walHeader?.bytes.equals(bytes)) return undefined;
    const header = parseWalHeader(bytes);
    if (!header) {
      return `the WAL file ${this.wal} was overwritten while the service was using it (its header no longer verifies: a restart would lose every commit in it)`;
    }
    if (this.walHeader && !isSuccessor(this.walHeader, header)) {
      return `the WAL file ${this.wal} was overwritten while the service was using it (its header was replaced: a restart would lose every commit in it)`;
    }
    this.walHeader = header;
    return undefined;
  }
}

/** What happened to the file at `path` since `known` (whose size follows the file's growth). */
function changeOf(path: string, known: FileState, name: string): string | undefined {
  const now = stateOf(path);
  if (!now) return `${name} ${path} was deleted while the service was using it`;
  if (now.dev !== known.dev || now.ino !== known.ino) {
    return `${name} ${path} was replaced by another file while the service was using it`;
  }
  if (now.size < known.size) {
    return `${name} ${path} was truncated while the service was using it (${now.size} bytes, it held ${known.size})`;
  }
  known.size = now.size;
  return undefined;
}
